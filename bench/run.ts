// All benchmarks, one after another, each printing its own figures and baseline ratio.
console.log('== ingest ==');
await import('./ingest.js');
console.log('\n== engine (accuracy and real-time factor) ==');
await import('./engine-rtf.js');
console.log('\n== RTP loss handling ==');
await import('./rtp-loss.js');
console.log('\n== scribed stream client CPU (needs npm run build) ==');
await import('./client-cpu.js');
console.log('\n== many hosts: failover time and PostgreSQL cost (needs npm run build, PostgreSQL and HAProxy) ==');
await import('./scaling.js');
console.log('\n== accuracy: dev and untouched evaluation split, against the bare CLI (needs npm run build) ==');
await import('./accuracy.js');
