/**
 * @module A bare JSON-RPC client over stdio, to split a round trip into the server's share and the
 * SDK client's. The SDK's stdio ReadBuffer concatenates every 64 KiB chunk onto the whole buffer
 * and searches it from the start again, so its cost grows with the square of the answer's size;
 * this client keeps the chunks and scans only the new one for the newline.
 */
import { spawn } from 'node:child_process';
import { getDefaultEnvironment } from '@modelcontextprotocol/client/stdio';

export class RawClient {
  static async open(server) {
    const child = spawn(server.command, server.args, {
      env: { ...getDefaultEnvironment(), ...server.env },
      stdio: ['pipe', 'pipe', 'ignore'],
    });
    const client = new RawClient(child);
    await client.request('initialize', {
      protocolVersion: '2025-06-18',
      capabilities: {},
      clientInfo: { name: 'skill-mcp-bench-raw', version: '0.0.0' },
    });
    child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' })}\n`);
    return client;
  }

  constructor(child) {
    this.child = child;
    this.nextId = 1;
    this.waiting = new Map();
    let chunks = [];
    child.stdout.on('data', (chunk) => {
      let start = 0;
      let newline = chunk.indexOf(10);
      while (newline >= 0) {
        chunks.push(chunk.subarray(start, newline));
        this.#deliver(Buffer.concat(chunks).toString('utf8'));
        chunks = [];
        start = newline + 1;
        newline = chunk.indexOf(10, start);
      }
      if (start < chunk.length) chunks.push(chunk.subarray(start));
    });
  }

  #deliver(line) {
    const message = JSON.parse(line);
    const pending = this.waiting.get(message.id);
    if (!pending) return;
    this.waiting.delete(message.id);
    if (message.error) pending.reject(new Error(message.error.message));
    else pending.resolve(message.result);
  }

  request(method, params = {}) {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      this.child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id, method, params })}\n`);
    });
  }

  close() {
    this.child.stdin.end();
    return new Promise((resolve) => {
      if (this.child.exitCode !== null) resolve();
      else this.child.once('exit', () => resolve());
    });
  }
}
