import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Request } from './request.js';
import { type BatchPlan, Scheduler, type SchedulerConfig } from './scheduler.js';

const base: SchedulerConfig = {
  numPages: 64,
  pageSize: 4,
  maxNumSeqs: 8,
  maxNumBatchedTokens: 64,
  enablePrefixCaching: true,
};

function req(id: string, len: number, first = 1): Request {
  return new Request(
    id,
    Array.from({ length: len }, (_, i) => first + i),
  );
}

/** Plays the engine: commits the plan and appends a token to each sampled sequence. */
function step(s: Scheduler, token = 7): BatchPlan {
  const plan = s.schedule();
  s.commit(plan);
  for (const q of plan.seqs) if (q.sample) q.req.outputIds.push(token);
  s.checkIntegrity();
  return plan;
}

describe('Scheduler', () => {
  it('chunks a long prompt within the token budget', () => {
    const s = new Scheduler({ ...base, maxNumBatchedTokens: 8 });
    const r = req('a', 20);
    s.add(r);
    expect(step(s).seqs.map((q) => [q.numCached, q.numNew, q.sample])).toEqual([[0, 8, false]]);
    expect(step(s).seqs.map((q) => [q.numCached, q.numNew, q.sample])).toEqual([[8, 8, false]]);
    expect(step(s).seqs.map((q) => [q.numCached, q.numNew, q.sample])).toEqual([[16, 4, true]]);
    expect(r.outputIds).toEqual([7]);
    expect(step(s).seqs.map((q) => [q.numCached, q.numNew])).toEqual([[20, 1]]);
  });

  it('keeps decoding running requests while a long prompt prefills in chunks', () => {
    const s = new Scheduler({ ...base, maxNumBatchedTokens: 6 });
    const [a, b] = [req('a', 2), req('b', 3, 40)];
    s.add(a);
    s.add(b);
    step(s);
    const long = req('long', 30, 100);
    s.add(long);
    for (let i = 0; i < 3; i++) {
      const plan = step(s);
      expect(plan.seqs.map((q) => [q.req.id, q.numNew])).toEqual([
        ['a', 1],
        ['b', 1],
        ['long', 4],
      ]);
    }
    expect(long.numComputed).toBe(12);
    expect(a.outputIds).toHaveLength(4);
  });

  it('admits at most maxNumSeqs', () => {
    const s = new Scheduler({ ...base, maxNumSeqs: 2 });
    for (const id of ['a', 'b', 'c']) s.add(req(id, 3));
    const plan = step(s);
    expect(plan.seqs.map((q) => q.req.id)).toEqual(['a', 'b']);
    expect(s.numWaiting).toBe(1);
  });

  it('preempts the newest request when pages run out and resumes it first', () => {
    const s = new Scheduler({ ...base, numPages: 4, enablePrefixCaching: false });
    const a = req('a', 7);
    const b = req('b', 7, 50);
    s.add(a);
    s.add(b);
    step(s); // each holds 2 pages (8 slots) after prefill of 7
    expect(s.allocator.numFree).toBe(0);
    step(s); // both decode into their 8th slot
    const plan = step(s); // a needs a 3rd page: b is preempted
    expect(plan.preempted).toEqual([b]);
    expect(plan.seqs.map((q) => q.req.id)).toEqual(['a']);
    expect(b.status).toBe('waiting');
    expect(b.pageIds).toEqual([]);
    expect(b.outputIds).toHaveLength(2);
    s.finish(a);
    const resume = step(s);
    expect(resume.seqs).toEqual([{ req: b, numCached: 0, numNew: 9, sample: true }]);
  });

  it('reuses cached full pages and always leaves a token to compute', () => {
    const s = new Scheduler(base);
    const a = req('a', 8);
    s.add(a);
    step(s);
    s.finish(a);
    const b = req('b', 8);
    s.add(b);
    const plan = step(s);
    // 8 tokens = 2 full pages, but only the first may be reused: the last token needs logits.
    expect(plan.seqs[0]).toMatchObject({ numCached: 4, numNew: 4, sample: true });
    expect(b.numCachedPromptTokens).toBe(4);
    expect(s.stats.prefixHitTokens).toBe(4);
    const c = req('c', 10);
    s.add(c);
    expect(step(s).seqs.find((q) => q.req === c)).toMatchObject({ numCached: 8, numNew: 2 });
  });

  it('defers a request whose next page another request computes in the same step', () => {
    const s = new Scheduler(base);
    const [a, b, c] = [req('a', 9), req('b', 9), req('c', 3, 60)];
    for (const r of [a, b, c]) s.add(r);
    expect(step(s).seqs.map((q) => q.req.id)).toEqual(['a', 'c']);
    const plan = step(s);
    expect(plan.seqs.find((q) => q.req === b)).toMatchObject({ numCached: 8, numNew: 1 });
    expect(b.numCachedPromptTokens).toBe(8);
  });

  it('does not record a step for a request finished meanwhile', () => {
    const s = new Scheduler(base);
    const a = req('a', 5);
    s.add(a);
    const plan = s.schedule();
    s.finish(a);
    s.commit(plan);
    expect(a.numComputed).toBe(0);
    expect(s.allocator.numUsed).toBe(0);
    s.checkIntegrity();
  });

  it('keeps integrity and frees everything under random load', () => {
    const cmd = fc.record({
      add: fc.boolean(),
      len: fc.integer({ min: 1, max: 20 }),
      prefix: fc.nat(2),
      abort: fc.nat(12),
    });
    fc.assert(
      fc.property(
        fc.integer({ min: 6, max: 16 }),
        fc.integer({ min: 1, max: 12 }),
        fc.boolean(),
        fc.array(cmd, { maxLength: 60 }),
        (numPages, budget, caching, cmds) => {
          const s = new Scheduler({
            numPages,
            pageSize: 2,
            maxNumSeqs: 4,
            maxNumBatchedTokens: budget,
            enablePrefixCaching: caching,
          });
          const live: Request[] = [];
          const limit = 2 * numPages; // total tokens a request may reach
          let n = 0;
          const tick = () => {
            step(s, n % 5);
            for (const r of [...live]) {
              if (r.numTokens >= Math.min(limit, r.promptIds.length + 6)) {
                s.finish(r);
                live.splice(live.indexOf(r), 1);
              }
            }
          };
          for (const c of cmds) {
            if (c.add && c.len < limit) {
              const r = req(`r${n++}`, c.len, c.prefix * 3);
              s.add(r);
              live.push(r);
            }
            if (c.abort < live.length) s.finish(live.splice(c.abort, 1)[0]!);
            tick();
          }
          for (let i = 0; s.hasWork; i++) {
            expect(i).toBeLessThan(10_000);
            tick();
          }
          expect(s.allocator.numUsed).toBe(0);
          s.checkIntegrity();
        },
      ),
      { numRuns: 200 },
    );
  });
});
