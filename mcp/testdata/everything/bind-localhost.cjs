// Preloaded (node --require) into the reference MCP server for tests: it
// listens on every interface by default, so every listen is forced onto
// 127.0.0.1, and the address it got is printed to stderr
// ("AMS_LISTENING 127.0.0.1 <port>") for the test to read.
'use strict';
const net = require('net');
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  if (args.length > 0 && typeof args[0] === 'object' && args[0] !== null) {
    args[0] = Object.assign({}, args[0], { host: '127.0.0.1' });
    delete args[0].path;
  } else {
    // listen(port[, host][, backlog][, callback]): drop a host, put ours.
    const rest = args.slice(1).filter((a) => typeof a !== 'string');
    args = [args[0], '127.0.0.1', ...rest];
  }
  this.once('listening', () => {
    const a = this.address();
    process.stderr.write(`AMS_LISTENING ${a.address} ${a.port}\n`);
  });
  return listen.apply(this, args);
};
