// What this node may use (cores, memory), and the capacity plan a calibration's figures give
// on it (src/core/capacity-plan.ts says how many streams).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  availableMemory,
  effectiveCores,
  MAX_STREAMS,
  parseCgroupCpuMax,
  parseCgroupMemoryLimit,
  parseCgroupV1Quota,
  parseMemAvailable,
  planCapacity,
  type CapacityPlan,
} from '../core/capacity-plan.js';
import type { CalibrationFigures } from './calibration-record.js';

/** What the node may use: cores (scheduler and cgroup quota) and memory still available
 * (MemAvailable, cut by the cgroup limit). cgroup v2: the process's own cgroup (from
 * /proc/self/cgroup, e.g. a systemd unit's CPUQuota= and MemoryMax=) and each parent up to the
 * root, the tightest applying; else cgroup v1 at the root of its controllers. */
export function readNodeResources(
  root = '/sys/fs/cgroup',
  meminfo = '/proc/meminfo',
  selfCgroup = '/proc/self/cgroup',
): { cores: number; memoryAvailableBytes: number | null } {
  const read = (f: string): string | null => {
    try {
      return fs.readFileSync(path.join(root, f), 'utf8');
    } catch {
      return null;
    }
  };
  let own = '/';
  try {
    own = /^0::(\/.*)$/m.exec(fs.readFileSync(selfCgroup, 'utf8'))?.[1] ?? '/';
  } catch {
    own = '/';
  }
  // The own cgroup, its parents, the root (a namespaced container sees its own as the root).
  const dirs: string[] = [];
  for (let d = path.posix.normalize(own); ; d = path.posix.dirname(d)) {
    dirs.push(d.replace(/^\/+/, ''));
    if (d === '/' || d === '.') break;
  }
  let quota: number | null = null;
  let memoryLeft: number | null = null;
  let v2 = false;
  for (const d of dirs) {
    const cpuMax = read(path.join(d, 'cpu.max'));
    if (cpuMax !== null) {
      v2 = true;
      const q = parseCgroupCpuMax(cpuMax);
      if (q !== null) quota = quota === null ? q : Math.min(quota, q);
    }
    const limitText = read(path.join(d, 'memory.max'));
    if (limitText !== null) {
      v2 = true;
      const limit = parseCgroupMemoryLimit(limitText);
      const usage = Number(read(path.join(d, 'memory.current'))?.trim() ?? 'NaN');
      const left = availableMemory(null, limit, Number.isFinite(usage) ? usage : null);
      if (left !== null) memoryLeft = memoryLeft === null ? left : Math.min(memoryLeft, left);
    }
  }
  if (!v2) {
    const q = read('cpu/cpu.cfs_quota_us');
    const p = read('cpu/cpu.cfs_period_us');
    if (q !== null && p !== null) quota = parseCgroupV1Quota(q, p);
    const limitText = read('memory/memory.limit_in_bytes');
    const usage = Number(read('memory/memory.usage_in_bytes')?.trim() ?? 'NaN');
    memoryLeft = availableMemory(
      null,
      limitText !== null ? parseCgroupMemoryLimit(limitText) : null,
      Number.isFinite(usage) ? usage : null,
    );
  }
  let memAvailable: number | null = null;
  try {
    memAvailable = parseMemAvailable(fs.readFileSync(meminfo, 'utf8'));
  } catch {
    memAvailable = null;
  }
  return {
    cores: effectiveCores(os.availableParallelism(), quota),
    memoryAvailableBytes: availableMemory(memAvailable ?? os.freemem(), memoryLeft, null),
  };
}

/** The plan for a calibration's figures on this node's resources. */
export function planFor(c: CalibrationFigures, resources = readNodeResources()): CapacityPlan {
  return planCapacity({
    costPerAudioSecond: c.costPerAudioSecond,
    cores: resources.cores,
    memoryAvailableBytes: resources.memoryAvailableBytes,
    memoryPerDecoderBytes: c.memoryPerDecoderBytes,
    memoryPerFurtherDecoderBytes: c.load?.furtherDecoderBytes ?? null,
    maxStreams: MAX_STREAMS,
  });
}
