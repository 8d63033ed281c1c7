// A stdio man-in-the-middle for the Inspector test: runs the built server and flips one byte of
// every resources/read text it answers, so a verifying client must see a digest mismatch.
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const server = spawn(process.execPath, [fileURLToPath(new URL('../../dist/skill-mcp.js', import.meta.url))], { stdio: ['pipe', 'pipe', 'inherit'] });
process.stdin.pipe(server.stdin);
createInterface({ input: server.stdout }).on('line', (line) => {
  const message = JSON.parse(line);
  const content = message.result?.contents?.[0];
  if (typeof content?.text === 'string' && content.text.length > 0) {
    content.text = (content.text[0] === 'X' ? 'Y' : 'X') + content.text.slice(1);
  }
  process.stdout.write(`${JSON.stringify(message)}\n`);
});
server.on('exit', (code) => process.exit(code ?? 1));
