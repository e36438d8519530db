// The package as a TypeScript user sees it: its name resolves through the
// "types" export condition to the declarations of types/, and these uses
// must compile (tsc -p test, from scripts/js-test.sh). Never run.

import { Client, GoneError, type Ref, type ClaimInfo, ERROR_CLASSES, digestOf } from '@claimcheck/client';
const cc = new Client('http://127.0.0.1:1', { apiKey: 'k' });
async function f(): Promise<void> {
  const ref: Ref = await cc.put('ns', 'x', { labels: { a: 'b' } });
  const info: ClaimInfo = await cc.stat(ref);
  const s: 'pending' | 'active' | 'deleted' = info.state;
  const p = await cc.redeem(ref);
  const v = await p.json<{ a: number }>();
  const n: number = v.a;
  const d: string = await digestOf(new Uint8Array(1));
  try { await cc.delete(ref); } catch (e) { if (e instanceof GoneError) console.log(e.reason, e.code); }
  const C = ERROR_CLASSES.not_found;
  const r = await cc.resolve<{ x: 1 }>(await cc.offload('ns', { x: 1 as const }));
  console.log(s, n, d, C, r.x);
  // @ts-expect-error: not an option
  await cc.put('ns', 'x', { nope: 1 });
}
void f;
