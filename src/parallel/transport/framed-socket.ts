import type { Socket } from 'node:net';

/**
 * Length-prefixed frames over one TCP connection. Header (16 bytes, little endian):
 * u8 kind, 3 pad, u32 seq, u64 payload length. Frames are delivered in order; `next()`
 * waits for the next one. When the connection ends, every pending and later `next()`
 * rejects with a `PeerLostError` naming the peer.
 */
export interface Frame {
  readonly kind: number;
  readonly seq: number;
  readonly payload: Buffer;
}

const HEADER = 16;

/** The connection to `peer` ended (it exited, crashed or closed it) or failed. */
export class PeerLostError extends Error {
  override name = 'PeerLostError';
  constructor(
    readonly peer: string,
    detail: string,
  ) {
    super(`lost the connection to ${peer}: ${detail}`);
  }
}

export class FramedSocket {
  private readonly chunks: Buffer[] = [];
  private buffered = 0;
  private readonly frames: Frame[] = [];
  private readonly waiters: { resolve: (f: Frame) => void; reject: (e: Error) => void }[] = [];
  private failure: Error | null = null;
  private closing = false;
  /** Called once when the connection is lost (not after our own `close()`). */
  onLost: ((e: PeerLostError) => void) | null = null;

  constructor(
    readonly socket: Socket,
    /** Who is on the other end, for error messages ("rank 2", "the rendezvous master"). */
    public peer: string,
  ) {
    socket.setNoDelay(true);
    socket.on('data', (b: Buffer) => this.onData(b));
    socket.on('error', (e) => this.fail(e.message));
    socket.on('close', () => this.fail('connection closed'));
  }

  send(kind: number, seq: number, payload: Uint8Array = new Uint8Array(0)): void {
    if (this.failure) throw this.failure;
    const head = Buffer.alloc(HEADER);
    head.writeUInt8(kind, 0);
    head.writeUInt32LE(seq >>> 0, 4);
    head.writeBigUInt64LE(BigInt(payload.byteLength), 8);
    this.socket.write(head);
    // Copied: the caller may overwrite its array before the kernel takes the bytes.
    if (payload.byteLength > 0) this.socket.write(Buffer.from(payload));
  }

  next(): Promise<Frame> {
    const f = this.frames.shift();
    if (f) return Promise.resolve(f);
    if (this.failure) return Promise.reject(this.failure);
    return new Promise((resolve, reject) => this.waiters.push({ resolve, reject }));
  }

  /** Ends the connection (after flushing what was sent) without reporting it as lost. */
  close(): void {
    if (this.closing) return;
    this.closing = true;
    this.socket.end();
    setTimeout(() => this.socket.destroy(), 1000).unref();
  }

  get lost(): boolean {
    return this.failure !== null;
  }

  private onData(b: Buffer): void {
    this.chunks.push(b);
    this.buffered += b.length;
    for (;;) {
      if (this.buffered < HEADER) return;
      const head = this.peek(HEADER);
      const len = Number(head.readBigUInt64LE(8));
      if (this.buffered < HEADER + len) return;
      const all = this.take(HEADER + len);
      const frame = {
        kind: all.readUInt8(0),
        seq: all.readUInt32LE(4),
        payload: all.subarray(HEADER),
      };
      const w = this.waiters.shift();
      if (w) w.resolve(frame);
      else this.frames.push(frame);
    }
  }

  private peek(n: number): Buffer {
    if (this.chunks[0]!.length < n) this.merge();
    return this.chunks[0]!.subarray(0, n);
  }

  private take(n: number): Buffer {
    if (this.chunks[0]!.length < n) this.merge();
    const first = this.chunks[0]!;
    const out = first.subarray(0, n);
    if (first.length === n) this.chunks.shift();
    else this.chunks[0] = first.subarray(n);
    this.buffered -= n;
    return out;
  }

  private merge(): void {
    const all = Buffer.concat(this.chunks, this.buffered);
    this.chunks.length = 0;
    this.chunks.push(all);
  }

  private fail(detail: string): void {
    if (this.failure) return;
    const err = new PeerLostError(this.peer, this.closing ? 'closed by this rank' : detail);
    this.failure = err;
    for (const w of this.waiters.splice(0)) w.reject(err);
    if (!this.closing) this.onLost?.(err);
  }
}
