// A tiny upstream for the example toolkit's http endpoints (config/toolkits/notes.yaml):
//   node scripts/example-upstream.js      -> http://127.0.0.1:9001
// POST /hello answers JSON built from the request context tkgate sends; POST /export.csv a CSV download.
import http from 'node:http';

const port = Number(process.env.PORT ?? 9001);

http
  .createServer((req, res) => {
    const chunks = [];
    req.on('data', (chunk) => chunks.push(chunk));
    req.on('end', () => {
      const context = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}');
      if (req.url === '/hello') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            greeting: `Hello, ${context.username}`,
            group: context.toolkit_group,
            member_since: context.member_since,
            request_id: req.headers['x-request-id'],
          }),
        );
      } else if (req.url === '/export.csv') {
        const csv = `field,value\nusername,${context.username}\ntoolkit_group,${context.toolkit_group ?? ''}\n`;
        res.writeHead(200, { 'content-type': 'text/csv', 'content-length': Buffer.byteLength(csv), 'content-disposition': 'attachment; filename="me.csv"' });
        res.end(csv);
      } else {
        res.writeHead(404, { 'content-type': 'application/json' });
        res.end('{"error":"not found"}');
      }
    });
  })
  // PORT=0 picks a free port (the tests do); the line names the port actually bound.
  .listen(port, '127.0.0.1', function () {
    process.stdout.write(`example upstream on http://127.0.0.1:${this.address().port}\n`);
  });
