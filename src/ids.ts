/**
 * Branded identifiers that are easy to mix up (STYLE 7): entity ids and epoch milliseconds are both
 * plain numbers at run time, but the compiler keeps them apart.
 */

declare const entityIdBrand: unique symbol;
/** The stable integer id of an entity (one per managed entity). */
export type EntityId = number & { readonly [entityIdBrand]: true };

declare const epochMsBrand: unique symbol;
/** Milliseconds since the Unix epoch (UTC). */
export type EpochMs = number & { readonly [epochMsBrand]: true };

export const asEntityId = (n: number): EntityId => n as EntityId;
export const asEpochMs = (n: number): EpochMs => n as EpochMs;
