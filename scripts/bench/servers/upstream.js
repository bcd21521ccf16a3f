// Baseline and upstream: a raw node:http server. /json answers a small JSON object; /1mb answers 1 MB.
import http from 'node:http';

const oneMb = Buffer.alloc(1024 * 1024, 'x');
const json = Buffer.from(JSON.stringify({ ok: true, items: [1, 2, 3] }));
const server = http.createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    if (req.url.startsWith('/1mb')) {
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': oneMb.length });
      res.end(oneMb);
    } else {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': json.length });
      res.end(json);
    }
  });
});
server.keepAliveTimeout = 30_000;
server.listen(Number(process.env.PORT), '127.0.0.1', () => process.stdout.write(`ready ${server.address().port}\n`));
