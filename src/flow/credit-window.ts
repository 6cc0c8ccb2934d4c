/**
 * A credit window: at most `credit` batches sent and not yet acknowledged (DESIGN 1 "Hand-offs").
 * The probe's link sends while the gateway's credit allows and is acknowledged cumulatively
 * (`ackThrough`); a publish target's channel keeps a few batches in flight and each settles on its
 * own (`settle`). The window also counts the units (changes, messages) its batches carry, which is
 * what a lost link gives back to be sent again, or what a buffer's bound still holds.
 *
 * `open` never refuses: the sender asks `hasCredit` first. A batch sent again outside the window's
 * turn (a channel's retry while nothing else is in flight) is opened the same way.
 */

interface Open {
  readonly seq: number;
  readonly units: number;
}

export class CreditWindow {
  /** Batches in flight, in the order they were opened (the window is a few batches wide). */
  private readonly inFlight: Open[] = [];
  private nextSeq = 1;
  private inFlightUnits = 0;

  /** `credit`: batches that may be in flight at once; may be set later (`setCredit`). */
  constructor(private limit = 0) {}

  /** Batches that may be in flight at once. */
  get credit(): number {
    return this.limit;
  }

  /** Sets the credit (the link's, from the gateway's `welcome`). */
  setCredit(credit: number): void {
    this.limit = credit;
  }

  /** Batches in flight. */
  get batches(): number {
    return this.inFlight.length;
  }

  /** Units (changes, messages) in the batches in flight. */
  get units(): number {
    return this.inFlightUnits;
  }

  /** True while another batch may be sent. */
  get hasCredit(): boolean {
    return this.inFlight.length < this.limit;
  }

  /** Counts a batch of `units` as sent; returns its sequence number (1, 2, … in this window). */
  open(units: number): number {
    const seq = this.nextSeq++;
    this.inFlight.push({ seq, units });
    this.inFlightUnits += units;
    return seq;
  }

  /**
   * Acknowledges every batch up to and including `seq` (a cumulative ack); returns how many batches
   * that was, or -1 (and changes nothing) when `seq` is not in flight.
   */
  ackThrough(seq: number): number {
    const first = this.inFlight[0];
    const last = this.inFlight.at(-1);
    if (first === undefined || last === undefined || seq < first.seq || seq > last.seq) return -1;
    let acked = 0;
    while ((this.inFlight[0]?.seq ?? Number.POSITIVE_INFINITY) <= seq) {
      const done = this.inFlight.shift() as Open;
      this.inFlightUnits -= done.units;
      acked += 1;
    }
    return acked;
  }

  /** Ends the one batch `seq`, acknowledged or failed (batches that settle in any order). */
  settle(seq: number): void {
    const index = this.inFlight.findIndex((batch) => batch.seq === seq);
    if (index < 0) return;
    const [done] = this.inFlight.splice(index, 1) as [Open];
    this.inFlightUnits -= done.units;
  }

  /** Forgets every batch in flight (the link was lost); returns the units they carried. */
  clear(): number {
    const units = this.inFlightUnits;
    this.inFlight.length = 0;
    this.inFlightUnits = 0;
    return units;
  }
}
