// Every resource's declared routes (one table a resource, in this folder): the API document is
// generated from this list (src/server/openapi/document.ts). A new resource adds its table here.
import type { RouteTable } from '../openapi/route-schema.js';
import { ACCOUNT_TABLE } from './account.js';
import { RULE_TABLE } from './rules.js';
import { SERVICE_TABLE } from './service.js';
import { WEBHOOK_TABLE } from './webhooks.js';
import { ASSEMBLYAI_TABLE } from '../facades/assemblyai/schemas.js';

export const DECLARED_ROUTES: readonly RouteTable[] = [SERVICE_TABLE, ACCOUNT_TABLE, RULE_TABLE, WEBHOOK_TABLE, ASSEMBLYAI_TABLE];
