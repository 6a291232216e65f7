// Every resource's declared routes (one table a resource, in this folder): the API document is
// generated from this list (src/server/openapi/document.ts). A new resource adds its table here.
import type { RouteTable } from '../openapi/route-schema.js';
import { RULE_TABLE } from './rules.js';

export const DECLARED_ROUTES: readonly RouteTable[] = [RULE_TABLE];
