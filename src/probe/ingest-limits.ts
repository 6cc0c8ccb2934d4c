/**
 * The setup's `limits` (DESIGN 5.4b, docs/security.md "Limits") on the names in a probe ingest
 * path: the managed entity, the sampler and its type, the dataview, the row and the stream are each
 * at most `limits.nameBytes` bytes of UTF-8, refused with 400 LIMIT_EXCEEDED before anything looks
 * them up (an error that quotes a name quotes at most 64 characters of it).
 */
import { overBytes } from "../limits/data-limits.js";
import { limitError, quoted } from "../limits/limit-refusals.js";

/** The path parameters of the probe's ingest routes; the sampler segment may be `name(type)`. */
export interface IngestPathNames {
  readonly me?: string;
  readonly sampler?: string;
  readonly dataview?: string;
  readonly row?: string;
  readonly stream?: string;
}

/** Throws LIMIT_EXCEEDED for the first name of the path longer than `nameBytes`. */
export function checkPathNames(params: IngestPathNames, nameBytes: number): void {
  check("The managed entity name in the path", params.me, nameBytes);
  const sampler = params.sampler;
  if (sampler !== undefined && overBytes(sampler, nameBytes)) {
    // `name(type)`: the name and the type are two names, each within the limit.
    const open = sampler.endsWith(")") ? sampler.indexOf("(") : -1;
    if (open < 0) check("The sampler name in the path", sampler, nameBytes);
    else {
      check("The sampler name in the path", sampler.slice(0, open), nameBytes);
      check("The sampler type in the path", sampler.slice(open + 1, -1), nameBytes);
    }
  }
  check("The dataview name in the path", params.dataview, nameBytes);
  check("The row name in the path", params.row, nameBytes);
  check("The stream name in the path", params.stream, nameBytes);
}

function check(what: string, name: string | undefined, nameBytes: number): void {
  if (name !== undefined && overBytes(name, nameBytes)) {
    throw limitError("nameBytes", `${what} (${quoted(name)})`, Buffer.byteLength(name), nameBytes);
  }
}
