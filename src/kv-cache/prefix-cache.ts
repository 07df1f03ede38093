import { createHash } from 'node:crypto';
import type { PageAllocator } from './page-allocator.js';

/**
 * Chained hash of one full page of tokens: sha256 over the parent page's hash and the page's
 * token ids, so equal hashes mean equal whole prefixes (a 256-bit collision is not a concern).
 */
export function pageHash(parentHash: string | null, pageTokens: ArrayLike<number>): string {
  const buf = Buffer.allocUnsafe(4 * pageTokens.length);
  for (let i = 0; i < pageTokens.length; i++) buf.writeInt32LE(pageTokens[i]!, 4 * i);
  const h = createHash('sha256');
  h.update(parentHash ?? 'root');
  h.update(buf);
  return h.digest('hex');
}

/**
 * Maps chained page hashes to the pages holding that KV. Only full pages are labelled, and only
 * once computed, so a hit never exposes a page a sequence is still writing.
 *
 * The cache holds no references: a labelled page whose last holder releases it sits on the
 * allocator's free list (oldest first) and keeps its label until the allocator hands it out
 * again, so unreferenced cached pages are evicted in LRU order exactly when memory is needed.
 */
export class PrefixCache {
  private readonly pageOf = new Map<string, number>();
  private readonly hashOf = new Map<number, string>();

  constructor(private readonly allocator: PageAllocator) {
    allocator.onReuse((page) => this.forget(page));
  }

  /** Number of labelled pages (used or free). */
  get size(): number {
    return this.pageOf.size;
  }

  /**
   * Pages of the longest prefix of `hashes` that is cached, each retained once for the caller
   * (who must release them). Leaves the cache itself unchanged.
   */
  match(hashes: readonly string[]): number[] {
    const pages: number[] = [];
    for (const h of hashes) {
      const page = this.pageOf.get(h);
      if (page === undefined) break;
      pages.push(page);
    }
    for (const page of pages) this.allocator.retain(page);
    return pages;
  }

  /**
   * Labels a computed full page the caller holds. When the hash is already cached (another
   * sequence computed the same prefix) nothing changes and false is returned.
   */
  insert(hash: string, page: number): boolean {
    if (this.pageOf.has(hash)) return false;
    if (this.allocator.refCount(page) === 0) {
      throw new Error(`PrefixCache: page ${page} is free; only held pages can be labelled`);
    }
    const old = this.hashOf.get(page);
    if (old !== undefined) {
      throw new Error(`PrefixCache: page ${page} already holds prefix ${old.slice(0, 12)}`);
    }
    this.pageOf.set(hash, page);
    this.hashOf.set(page, hash);
    return true;
  }

  /** The prefix hash a page is labelled with, if any. */
  labelOf(page: number): string | undefined {
    return this.hashOf.get(page);
  }

  /** Free pages that still carry a label (reclaimable, and reusable by a hit). */
  numCachedFree(): number {
    let n = 0;
    for (const page of this.hashOf.keys()) if (this.allocator.refCount(page) === 0) n++;
    return n;
  }

  /** Drops every label (pages in use keep their contents; they are just no longer shared). */
  clear(): void {
    this.pageOf.clear();
    this.hashOf.clear();
  }

  checkIntegrity(): void {
    if (this.pageOf.size !== this.hashOf.size) {
      throw new Error(`PrefixCache: ${this.pageOf.size} hashes but ${this.hashOf.size} pages`);
    }
    for (const [hash, page] of this.pageOf) {
      if (this.hashOf.get(page) !== hash) {
        throw new Error(`PrefixCache: page ${page} and hash ${hash.slice(0, 12)} disagree`);
      }
      if (page < 0 || page >= this.allocator.numPages) {
        throw new Error(`PrefixCache: page ${page} out of range`);
      }
    }
  }

  private forget(page: number): void {
    const hash = this.hashOf.get(page);
    if (hash === undefined) return;
    this.hashOf.delete(page);
    this.pageOf.delete(hash);
  }
}
