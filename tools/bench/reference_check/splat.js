// The reference web viewer's own .ply -> .splat conversion (processPlyBuffer in antimatter15/splat
// main.js, read from a checkout), for a byte comparison with splat's .splat.
// Usage: node splat.js MAIN_JS MODEL.ply OUT.splat
const fs = require('fs');
const src = fs.readFileSync(process.argv[2], 'utf8');
const start = src.indexOf('function processPlyBuffer(inputBuffer)');
let depth = 0, i = src.indexOf('{', start);
for (; i < src.length; i++) { if (src[i] === '{') depth++; else if (src[i] === '}') { depth--; if (depth === 0) break; } }
const fn = eval('(' + src.slice(start, i + 1) + ')');
const input = fs.readFileSync(process.argv[3]);
const out = fn(input.buffer.slice(input.byteOffset, input.byteOffset + input.byteLength));
fs.writeFileSync(process.argv[4], Buffer.from(out));
