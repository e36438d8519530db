// One operation of scripts/bench-js.sh through the JavaScript client, in
// a process of its own so that its peak memory is the operation's:
//   node op.mjs put    URL FILE        prints the ref
//   node op.mjs upload URL FILE        prints the ref (direct upload)
//   node op.mjs redeem URL REF OUT     writes the verified payload to OUT
import { openAsBlob, readFileSync, createWriteStream } from 'node:fs';
import { once } from 'node:events';
import { Client } from '@claimcheck/client';

const [op, url, a, b] = process.argv.slice(2);
const cc = new Client(url);
switch (op) {
  case 'put':
    console.log(JSON.stringify(await cc.put('bench', await openAsBlob(a))));
    break;
  case 'upload':
    console.log(JSON.stringify(await cc.upload('bench', await openAsBlob(a))));
    break;
  case 'redeem': {
    const p = await cc.redeem(readFileSync(a, 'utf8'));
    // A plain loop: Writable.toWeb does not wait for the file (Node 20).
    const out = createWriteStream(b);
    for await (const chunk of p.body) if (!out.write(chunk)) await once(out, 'drain');
    out.end();
    await once(out, 'finish');
    break;
  }
  default:
    throw new Error(`unknown operation ${op}`);
}
