// A WebSocket upstream for scenario 14: accepts sockets and echoes what it is sent (the bench's sockets stay idle).
import { WebSocketServer } from 'ws';

const server = new WebSocketServer({ port: Number(process.env.PORT), host: '127.0.0.1', perMessageDeflate: false, clientTracking: false });
server.on('connection', (socket) => socket.on('message', (data, isBinary) => socket.send(data, { binary: isBinary })));
server.on('listening', () => process.stdout.write(`ready ${server.address().port}\n`));
