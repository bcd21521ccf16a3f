// Baseline: nginx proxy_pass with upstream keepalive, when nginx is installed (Debian package nginx).
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { commandInstalled, startProcess } from '../processes.js';

export const nginxInstalled = () => commandInstalled('nginx', ['-v']);

export async function startNginx(dir, port, upstreamPort) {
  mkdirSync(path.join(dir, 'logs'), { recursive: true });
  const conf = path.join(dir, 'nginx.conf');
  writeFileSync(
    conf,
    `worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/logs/error.log warn;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path ${dir}/body; proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi; uwsgi_temp_path ${dir}/uwsgi; scgi_temp_path ${dir}/scgi;
  upstream backend { server 127.0.0.1:${upstreamPort}; keepalive 64; }
  server {
    listen 127.0.0.1:${port};
    location / {
      proxy_pass http://backend;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
    }
  }
}
`,
  );
  return startProcess('nginx', ['-p', dir, '-c', conf, '-g', 'daemon off;'], { port, timeoutMs: 5000 });
}
