// The layers of src/ (docs/architecture.md, "Layers"), enforced by dependency-cruiser in
// `npm test` (`npm run lint:deps`). Bottom to top:
//
//   core                                  pure decisions: no I/O, nothing else from src/
//   text, vad, threads, obs, media,       leaf adapters over core
//   outbound
//   store, engine                         persistence; recognition on worker threads
//   accounts, music, voices, recording,   the service's work, over store and engine
//   batch, session
//   config.ts -> console -> server        the operator's settings; the HTTP and socket adapters
//   service.ts -> cli, cli.ts             the process
//   client -> gateway, rtp                the client side (library and daemons), over core only
//
// A module may import its own layer's modules and those of the layers its rule allows.
// Type-only imports count (tsPreCompilationDeps): a type is a dependency of the design too.
// Exceptions are named in the rule that makes them, with why.

/** `^src/(a|b|...)(/|\.ts$)`: the named directories (or top-level files, given with `.ts`). */
function under(...parts) {
  const names = parts.map((p) => p.replace(/\./g, '\\.'));
  return `^src/(${names.join('|')})(/|$)`;
}

/** A layer may import only these parts of src/ (its own included). */
function layer(name, from, allowed, comment) {
  return {
    name,
    comment,
    severity: 'error',
    from: { path: from },
    to: { path: '^src/', pathNot: under(...allowed) },
  };
}

// Node modules that reach the outside world. The cores decide; adapters act.
const IO_MODULES = [
  'fs',
  'fs/promises',
  'dgram',
  'dns',
  'dns/promises',
  'worker_threads',
  'child_process',
  'cluster',
  'https',
  'http2',
  'tls',
  'readline',
  'inspector',
];

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'An import cycle couples its modules into one: neither can be read, tested or loaded alone.',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    {
      name: 'not-to-unresolvable',
      comment: 'An import that resolves to no file.',
      severity: 'error',
      from: {},
      to: { couldNotResolve: true },
    },
    {
      name: 'no-test-code-in-src',
      comment: 'The service never imports tests, their helpers or benches.',
      severity: 'error',
      from: { path: '^src/' },
      to: { path: '^(test|bench)/' },
    },
    {
      name: 'no-importing-test-files',
      comment: 'A test file imported by another runs its tests twice; shared set-up belongs in test/helpers.',
      severity: 'error',
      from: {},
      to: { path: '\\.test\\.ts$' },
    },
    {
      name: 'no-dev-dependencies-in-src',
      comment: 'What src/ imports must be installed in production (a dependency, not a devDependency).',
      severity: 'error',
      from: { path: '^src/' },
      to: { dependencyTypes: ['npm-dev'], dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'no-undeclared-packages',
      comment: 'A package src/ imports must be in package.json.',
      severity: 'error',
      from: { path: '^src/' },
      to: { dependencyTypes: ['npm-no-pkg', 'npm-unknown'] },
    },

    // ------------------------------------------------------------------ core: pure
    layer('core-imports-only-core', '^src/core/', ['core'], 'The pure cores import nothing above them.'),
    {
      name: 'core-does-no-io',
      comment: 'The pure cores do no I/O: no file, socket, process or thread modules.',
      severity: 'error',
      from: { path: '^src/core/' },
      to: { dependencyTypes: ['core'], path: `^(node:)?(${IO_MODULES.join('|')})$` },
    },
    {
      name: 'core-does-no-network-io',
      comment:
        'net and http are I/O modules too. Two cores use only their in-memory parts: outbound-policy.ts ' +
        "classifies addresses with net.BlockList and net.isIP (no socket), envelope.ts names a status with http's STATUS_CODES table.",
      severity: 'error',
      from: { path: '^src/core/', pathNot: '^src/core/(outbound-policy|envelope)\\.ts$' },
      to: { dependencyTypes: ['core'], path: '^(node:)?(net|http)$' },
    },

    // ------------------------------------------------------------------ leaf adapters
    layer('text-on-core', '^src/text/', ['core', 'text'], 'Text shaping (src/text) is pure and builds on the cores only.'),
    layer('vad-on-core', '^src/vad/', ['core', 'vad'], 'The voice detector builds on the cores only.'),
    layer('threads-on-core', '^src/threads/', ['core', 'threads'], 'Worker start-up builds on the cores only.'),
    layer('obs-on-core', '^src/obs/', ['core', 'obs'], 'Logging and metrics build on the cores only.'),
    layer('media-on-core', '^src/media/', ['core', 'media'], 'Media probing builds on the cores only.'),
    layer('pages-on-core', '^src/pages/', ['core', 'pages'], "A browser page's static files, served from a fixed list: on the cores only."),
    layer(
      'outbound-on-core',
      '^src/outbound/',
      ['core', 'outbound'],
      "Requests sent on a user's behalf, checked against the outbound policy (a core), and nothing else.",
    ),

    // ------------------------------------------------------------------ persistence and recognition
    layer(
      'store-below-the-service',
      '^src/store/',
      ['core', 'threads', 'store'],
      'The store knows no session, server, engine or CLI: it persists what it is given.',
    ),
    layer(
      'engine-below-the-service',
      '^src/engine/',
      ['core', 'obs', 'threads', 'vad', 'engine'],
      'The engine recognizes what it is given: it reads no configuration and knows no session, store, server or CLI.',
    ),

    // ------------------------------------------------------------------ the service's work
    layer('accounts-on-store', '^src/accounts/', ['core', 'store', 'accounts'], 'Account provisioning is store work.'),
    layer('music-on-store', '^src/music/', ['core', 'store', 'music'], 'Music jobs are store work.'),
    layer('voices-on-store', '^src/voices/', ['core', 'outbound', 'store', 'voices'], 'Voice design jobs and callbacks are store work.'),
    layer(
      'webhooks-on-store',
      '^src/webhooks/',
      ['core', 'outbound', 'store', 'webhooks'],
      'Webhook delivery is store work (the outbox is the queue) sent through the outbound policy.',
    ),
    layer(
      'recording-on-store',
      '^src/recording/',
      ['core', 'store', 'recording'],
      'Recordings (masking, mixing, FLAC through ffmpeg, pieces and files in the store) know no session, batch job or server: they are handed masked-to-be audio and spans.',
    ),
    layer(
      'analytics-on-store',
      '^src/analytics/',
      ['core', 'text', 'obs', 'store', 'analytics'],
      "Conversation analytics' adapters: the store computes a finished call's figures (a pure core); this layer hands it the text matchers and the metrics.",
    ),
    layer(
      'batch-below-the-server',
      '^src/batch/',
      ['core', 'text', 'obs', 'media', 'store', 'engine', 'batch'],
      'Batch jobs know no session, server or CLI.',
    ),
    layer(
      'session-below-the-server',
      '^src/session/',
      ['core', 'text', 'vad', 'threads', 'obs', 'media', 'store', 'engine', 'session'],
      'Live sessions know no server, configuration or CLI: the server hands them sockets and settings.',
    ),

    // ------------------------------------------------------------------ settings and adapters
    layer(
      'console-on-config',
      '^src/console/',
      ['core', 'config.ts', 'pages', 'console'],
      'The console plugin serves files under the settings.',
    ),
    layer(
      'desk-on-store',
      '^src/desk/',
      ['core', 'config.ts', 'pages', 'store', 'desk'],
      'The desk plugin serves files; its login links are store work (issued by the CLI).',
    ),
    {
      name: 'only-the-process-imports-the-server',
      comment: 'The server (routes, sockets) is assembled by service.ts and the CLI only.',
      severity: 'error',
      from: { path: '^src/', pathNot: under('server', 'service.ts', 'cli', 'cli.ts') },
      to: { path: '^src/server/' },
    },
    {
      name: 'only-the-cli-imports-the-service',
      comment: 'service.ts is started by the CLI.',
      severity: 'error',
      from: { path: '^src/', pathNot: under('service.ts', 'cli', 'cli.ts') },
      to: { path: '^src/service\\.ts$' },
    },
    {
      name: 'nothing-imports-the-cli',
      comment: 'The CLI is the top: only its entry point (cli.ts) and its own modules import it.',
      severity: 'error',
      from: { path: '^src/', pathNot: under('cli', 'cli.ts') },
      to: { path: under('cli', 'cli.ts') },
    },

    // ------------------------------------------------------------------ the client side
    // The client side logs and exports metrics with the same helpers as the node (src/obs sits
    // right above the cores), and nothing else of the server.
    layer(
      'client-on-core',
      '^src/client/',
      ['core', 'obs', 'client'],
      'The client library (SessionStreamer) speaks the protocol defined in the cores and nothing of the server.',
    ),
    layer('gateway-on-client', '^src/gateway/', ['core', 'obs', 'client', 'gateway'], 'The telephony gateway is a client of the service.'),
    layer('rtp-on-client', '^src/rtp/', ['core', 'obs', 'client', 'rtp'], 'RTP ingest is a client of the service.'),
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    // The build output and the models are not source (a test may name dist/cli.js).
    exclude: { path: '^(dist|build|models|data)/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    // NodeNext: `./x.js` in an import names `./x.ts`; packages resolve through their `exports`.
    enhancedResolveOptions: {
      extensions: ['.ts', '.js', '.cjs', '.mjs', '.json', '.node'],
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default', 'types'],
    },
  },
};
