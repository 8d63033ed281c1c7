/** A preload for profiling (bench/run-catalog.mjs --prof): V8's sampling profiler from start to exit, written to $PROF_DIR. Bench-only. */
const inspector = require('node:inspector');
const fs = require('node:fs');
const dir = process.env.PROF_DIR;
if (dir) {
  const s = new inspector.Session();
  s.connect();
  s.post('Profiler.enable');
  s.post('Profiler.setSamplingInterval', { interval: 200 });
  s.post('Profiler.start');
  const dump = () => {
    s.post('Profiler.stop', (err, r) => {
      if (!err) fs.writeFileSync(`${dir}/${process.pid}-${process.argv.slice(2,3).join('')}.cpuprofile`, JSON.stringify(r.profile));
    });
  };
  process.on('exit', dump);
  process.on('SIGUSR2', () => { dump(); s.post('Profiler.start'); });
}
