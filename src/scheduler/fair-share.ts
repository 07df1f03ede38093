import type { Request } from './request.js';

interface Holding {
  seqs: number;
  pages: number;
}

/**
 * Per-request-group accounting for one admission pass. A group is one client request (its n
 * choices and prompts are separate sequences, each counted like a request of its own). While
 * another group has work waiting, a group may hold at most `share` of the batch slots and of
 * the KV pages: it is not admitted past that, and a group strictly over it is the one
 * preempted to make room. Alone, a group may use everything; and every group may run one
 * sequence, so single-choice requests keep plain first-come-first-served order.
 */
export class FairShare {
  private readonly held = new Map<string, Holding>();
  private readonly waitingByGroup = new Map<string, number>();
  private waitingTotal = 0;
  private readonly seqCap: number;
  private readonly pageCap: number;
  private readonly enabled: boolean;

  constructor(
    share: number,
    maxNumSeqs: number,
    numPages: number,
    running: readonly Request[],
    waiting: readonly Request[],
    private readonly pagesFor: (tokens: number) => number,
  ) {
    this.enabled = share < 1;
    this.seqCap = Math.max(1, Math.floor(share * maxNumSeqs));
    this.pageCap = Math.max(1, Math.floor(share * numPages));
    for (const r of running) this.add(r);
    for (const r of waiting) {
      if (r.paused) continue;
      this.waitingByGroup.set(r.group, (this.waitingByGroup.get(r.group) ?? 0) + 1);
      this.waitingTotal++;
    }
  }

  /** r's group is at its share and another group is waiting: r must let that one go first. */
  mustYield(r: Request): boolean {
    if (!this.enabled || !this.othersWaiting(r.group)) return false;
    const h = this.held.get(r.group);
    if (h === undefined || h.seqs === 0) return false; // a group always gets one sequence
    return h.seqs + 1 > this.seqCap || h.pages + this.pagesFor(r.numTokens) > this.pageCap;
  }

  /** Holds more than its share (a preemption victim when another group needs room). */
  isOver(group: string): boolean {
    if (!this.enabled) return false;
    const h = this.held.get(group);
    // One sequence is the unit of FCFS scheduling; only a group of several is cut back.
    return h !== undefined && h.seqs > 1 && (h.seqs > this.seqCap || h.pages > this.pageCap);
  }

  add(r: Request): void {
    const h = this.held.get(r.group) ?? { seqs: 0, pages: 0 };
    h.seqs++;
    h.pages += r.pageIds.length;
    this.held.set(r.group, h);
  }

  /** Call before r's pages are released. */
  remove(r: Request): void {
    const h = this.held.get(r.group);
    if (!h) return;
    h.seqs--;
    h.pages -= r.pageIds.length;
  }

  private othersWaiting(group: string): boolean {
    return this.waitingTotal - (this.waitingByGroup.get(group) ?? 0) > 0;
  }
}
