// Prometheus metrics of the ingest clients (`scribed stream`, `scribed rtp`): one registry per
// process, served by `serveMetrics` for `--metrics-port`. Names carry `scribed_client_` so
// they never collide with the server's when both are scraped into one Prometheus.
import http from 'node:http';
import { Counter, Gauge, Registry } from 'prom-client';
import { collectProcessMetrics } from '../obs/metrics.js';

export class ClientMetrics {
  readonly registry = new Registry();
  private readonly r = [this.registry];

  readonly capturedSeconds = new Counter({
    name: 'scribed_client_audio_captured_seconds_total',
    help: 'Audio captured from the input, in seconds',
    registers: this.r,
  });
  readonly sentSeconds = new Counter({
    name: 'scribed_client_audio_sent_seconds_total',
    help: 'Audio sent to the server, in seconds (re-sends included)',
    registers: this.r,
  });
  readonly acknowledgedSeconds = new Counter({
    name: 'scribed_client_audio_acknowledged_seconds_total',
    help: 'Audio the server acknowledged, in seconds',
    registers: this.r,
  });
  readonly bufferedSeconds = new Gauge({
    name: 'scribed_client_audio_buffered_seconds',
    help: 'Captured audio not yet acknowledged, held in the ring buffers, in seconds',
    registers: this.r,
  });
  readonly overflows = new Counter({
    name: 'scribed_client_buffer_overflows_total',
    help: 'Times a ring buffer was full and dropped its oldest unacknowledged audio',
    registers: this.r,
  });
  readonly overflowSeconds = new Counter({
    name: 'scribed_client_audio_overflow_seconds_total',
    help: 'Unacknowledged audio dropped by ring buffer overflow, in seconds',
    registers: this.r,
  });
  readonly reconnects = new Counter({
    name: 'scribed_client_reconnects_total',
    help: 'Socket reconnect attempts after a loss',
    registers: this.r,
  });
  readonly resumes = new Counter({ name: 'scribed_client_resumes_total', help: 'Successful session resumes', registers: this.r });
  readonly finals = new Counter({ name: 'scribed_client_final_segments_total', help: 'Final segments received', registers: this.r });
  readonly gapSamples = new Counter({
    name: 'scribed_client_gap_samples_total',
    help: 'Samples this client sent as real audio that the server reported filling with silence (gap events)',
    registers: this.r,
  });
  readonly streams = new Gauge({ name: 'scribed_client_streams', help: 'Streams currently open in this process', registers: this.r });

  constructor(opts: { defaults?: boolean } = {}) {
    if (opts.defaults !== false) collectProcessMetrics(this.registry, 'scribed_client_');
  }

  /** Same as serveMetrics(this, port, host). */
  serve(port: number, host?: string): Promise<{ port: number; close(): Promise<void> }> {
    return serveMetrics(this, port, host);
  }
}

/** Serve GET /metrics on `port` (127.0.0.1 unless `host` is given). Port 0 picks one. */
export async function serveMetrics(
  metrics: ClientMetrics,
  port: number,
  host = '127.0.0.1',
): Promise<{ port: number; close(): Promise<void> }> {
  const server = http.createServer((req, res) => {
    if (req.method === 'GET' && (req.url === '/metrics' || req.url?.startsWith('/metrics?'))) {
      metrics.registry.metrics().then(
        (body) => {
          res.writeHead(200, { 'content-type': metrics.registry.contentType });
          res.end(body);
        },
        (err: unknown) => {
          res.writeHead(500, { 'content-type': 'text/plain' });
          res.end(String(err));
        },
      );
      return;
    }
    res.writeHead(404, { 'content-type': 'text/plain' });
    res.end('not found; try /metrics\n');
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const address = server.address();
  return {
    port: typeof address === 'object' && address ? address.port : port,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
