// A small HTTP client for the issue-4 endpoints: JSON in, status + parsed body out.
export interface ApiResponse {
  status: number;
  headers: Headers;
  json: any;
  text: string;
}

export async function call(
  baseUrl: string,
  method: string,
  path: string,
  opts: { key?: string | null; body?: unknown; rawBody?: string | FormData; headers?: Record<string, string> } = {},
): Promise<ApiResponse> {
  const headers: Record<string, string> = { ...opts.headers };
  if (opts.key) headers.accessKey = opts.key;
  let body: string | FormData | undefined;
  if (opts.rawBody !== undefined) body = opts.rawBody;
  else if (opts.body !== undefined) {
    body = JSON.stringify(opts.body);
    headers['content-type'] ??= 'application/json';
  }
  const res = await fetch(`${baseUrl}${path}`, { method, headers, body });
  const text = await res.text();
  const isJson = res.headers.get('content-type')?.startsWith('application/json') ?? false;
  return { status: res.status, headers: res.headers, json: isJson ? JSON.parse(text) : null, text };
}
