/**
 * The dataview and row endpoints of the probe (seed B, DESIGN 3.1-3.3):
 * `…/managedEntity/<me>/sampler/<sampler>/dataview/<dataview>` (GET, PUT, DELETE) and
 * `…/dataview/<dataview>/row/<row>` (GET, PUT, DELETE). A write is admitted first (memory, room in
 * the link's buffer: ingest-admission.ts), then applied to the dataview's model in memory, and its
 * changes are handed to the link in published terms (one row upsert for a row PUT, one replace for a
 * dataview PUT, …). GET on an fkm sampler's one dataview shows its keywords (DESIGN 3.4).
 */
import type { FastifyInstance, FastifyRequest } from "fastify";
import type { Logger } from "pino";
import { PROBE_MAX_DATAVIEWS_PER_SAMPLER } from "../../config/defaults.js";
import { VigilError } from "../../errors/catalog.js";
import { resource } from "../../http/routes.js";
import { type DataLimits, DEFAULT_DATA_LIMITS } from "../../limits/data-limits.js";
import type { Change, DataviewAddress, ProbeLimits } from "../../link/protocol.js";
import { DataviewModel, type RowCells } from "../dataview-model.js";
import type { FkmView } from "../fkm/fkm-sampler.js";
import { type BodyLimits, parseColumnOrder, parseDataviewBody, parseRowBody } from "../ingest-body.js";
import type { IngestPathNames } from "../ingest-limits.js";
import type { AcceptedTotals } from "../probe-metrics.js";
import type { SamplerRegistry, SamplerState } from "../sampler-registry.js";
import type { ProbeStreams } from "../streams/probe-streams.js";
import type { IngestAdmission } from "./ingest-admission.js";

/** The seed's reserved name: no endpoint operates on it (seed B rule 7). */
export const STREAMS_DATAVIEW = "Streams Dataview";

/** Route of one dataview; the sampler segment may be `name(type)`. */
export const DATAVIEW_PATH = "/v1/managedEntity/:me/sampler/:sampler/dataview/:dataview";

/** What the dataview and row routes need from the probe. */
export interface DataviewRouteDeps {
  readonly registry: SamplerRegistry;
  /** For the fkm samplers' dataviews. */
  readonly streams: ProbeStreams;
  readonly ingest: IngestAdmission;
  /** Refuses a name of the path beyond `limits.nameBytes` (ingest-limits.ts). */
  readonly checkNames: (params: IngestPathNames) => void;
  /** The gateway-wide limits in force (the gateway's, or `--config`'s, or the defaults). */
  readonly limits: () => ProbeLimits;
  /** Hands an accepted request's changes to the link. */
  readonly submit: (changes: readonly Change[]) => void;
  /** Counted for /metrics (probe-metrics.ts). */
  readonly accepted: AcceptedTotals;
  readonly log: Logger;
}

interface DataviewParams {
  me: string;
  sampler: string;
  dataview: string;
  row?: string;
}

/** The address the link and the gateway know a dataview of `sampler` by. */
export function addressOf(sampler: SamplerState, dataview: string): DataviewAddress {
  return {
    managedEntity: sampler.managedEntity,
    sampler: sampler.setup.name,
    samplerType: sampler.setup.type,
    dataview,
  };
}

/** Registers the dataview and row endpoints on the probe's HTTP app. */
export function registerDataviewRoutes(app: FastifyInstance, deps: DataviewRouteDeps): void {
  const { registry, streams, ingest, checkNames, submit, accepted, log } = deps;
  const data = (): DataLimits => deps.limits().data ?? DEFAULT_DATA_LIMITS;

  // One object per setting of the limits, so a request allocates none.
  let cachedBodyLimits: BodyLimits = { maxCellLength: 0, nameBytes: 0, cellBytes: 0, jsonDepth: 0 };
  const bodyLimits = (): BodyLimits => {
    const { maxCellLength } = deps.limits();
    const { nameBytes, cellBytes, jsonDepth } = data();
    if (
      cachedBodyLimits.maxCellLength !== maxCellLength ||
      cachedBodyLimits.nameBytes !== nameBytes ||
      cachedBodyLimits.cellBytes !== cellBytes ||
      cachedBodyLimits.jsonDepth !== jsonDepth
    ) {
      cachedBodyLimits = { maxCellLength, nameBytes, cellBytes, jsonDepth };
    }
    return cachedBodyLimits;
  };

  const dataviewLimits = (sampler: SamplerState) => {
    const limits = deps.limits();
    return {
      rowLimit: limits.customDataviewMaxRows > 0 ? limits.customDataviewMaxRows : sampler.setup.rowLimit,
      maxColumns: limits.maxColumnsPerDataview,
      maxCellLength: limits.maxCellLength,
      nameBytes: data().nameBytes,
      linkFrameBytes: data().linkFrameBytes,
    };
  };

  const target = (request: FastifyRequest): { sampler: SamplerState; params: DataviewParams } => {
    const params = request.params as DataviewParams;
    checkNames(params);
    if (params.dataview === STREAMS_DATAVIEW) throw new VigilError("RESERVED_DATAVIEW");
    // `…/dataview/` and `…/row/` route here with an empty name: a name is required.
    if (params.dataview === "") throw emptyName("dataview", "/dataview/<name>");
    if (params.row === "") throw emptyName("row", "/row/<name>");
    return { sampler: registry.resolve(params.me, params.sampler), params };
  };

  const existing = (sampler: SamplerState, dataview: string): DataviewModel => {
    const model = sampler.dataviews.get(dataview);
    if (model === undefined)
      throw new VigilError("DATAVIEW_NOT_FOUND", { sampler: sampler.setup.name, dataview });
    return model;
  };

  resource(app, DATAVIEW_PATH, {
    GET: async (request) => {
      // An fkm sampler's one dataview, named after it (DESIGN 3.4), as a dataview GET shows one.
      const raw = request.params as { me: string; sampler: string; dataview: string };
      checkNames(raw);
      const fkm = streams.fkmView(raw.me, raw.sampler);
      if (fkm !== undefined && raw.dataview === fkm.sampler) return fkmDataviewView(fkm);
      const { sampler, params } = target(request);
      return existing(sampler, params.dataview).state();
    },
    PUT: ingest((request) => {
      const { sampler, params } = target(request);
      const rows = parseDataviewBody(request.body as Buffer | undefined, bodyLimits());
      const columnOrder = parseColumnOrder(request.headers["column-order"], data().nameBytes);
      let model = sampler.dataviews.get(params.dataview);
      if (model === undefined) {
        if (sampler.dataviews.size >= PROBE_MAX_DATAVIEWS_PER_SAMPLER) {
          throw new VigilError("TOO_MANY_DATAVIEWS", {
            sampler: sampler.setup.name,
            limit: PROBE_MAX_DATAVIEWS_PER_SAMPLER,
          });
        }
        model = new DataviewModel(addressOf(sampler, params.dataview));
      }
      const { result, changes, notes } = model.replace(rows, columnOrder, dataviewLimits(sampler));
      if (notes.ignoredColumns.length > 0) {
        // The real product's documented behaviour: such a name is not displayed and a warning logged.
        log.warn(
          {
            sampler: sampler.setup.name,
            dataview: params.dataview,
            columns: notes.ignoredColumns.slice(0, 20).map((c) => (c.length > 64 ? `${c.slice(0, 64)}…` : c)),
            count: notes.ignoredColumns.length,
          },
          "Column-Order names columns that no row has; they are not shown",
        );
      }
      sampler.dataviews.set(params.dataview, model);
      submit(changes);
      accepted.rows += result.rows;
      accepted.droppedRows += result.dropped;
      for (let i = 0; i < result.rows; i += 1) accepted.cells += (rows[i] as RowCells).size;
      return result;
    }),
    DELETE: ingest((request) => {
      const { sampler, params } = target(request);
      existing(sampler, params.dataview);
      sampler.dataviews.delete(params.dataview);
      submit([{ kind: "dataviewDelete", dataview: addressOf(sampler, params.dataview), at: Date.now() }]);
      return { deleted: params.dataview };
    }),
  });

  resource(app, `${DATAVIEW_PATH}/row/:row`, {
    GET: async (request) => {
      const { sampler, params } = target(request);
      const row = existing(sampler, params.dataview).row(params.row ?? "");
      if (row === undefined)
        throw new VigilError("ROW_NOT_FOUND", { dataview: params.dataview, row: params.row });
      return row;
    },
    PUT: ingest((request) => {
      const { sampler, params } = target(request);
      const model = existing(sampler, params.dataview);
      const cells = parseRowBody(request.body as Buffer | undefined, bodyLimits());
      const { name: row, changes } = model.putRow(params.row ?? "", cells, dataviewLimits(sampler));
      submit(changes);
      accepted.rows += 1;
      accepted.cells += cells.size;
      return { row };
    }),
    DELETE: ingest((request) => {
      const { sampler, params } = target(request);
      const changes = existing(sampler, params.dataview).deleteRow(params.row ?? "");
      if (changes === undefined) {
        throw new VigilError("ROW_NOT_FOUND", { dataview: params.dataview, row: params.row });
      }
      submit(changes);
      return { deleted: params.row };
    }),
  });
}

/** An fkm sampler's dataview in the shape of a dataview GET: one row per keyword (DESIGN 3.4). */
function fkmDataviewView(fkm: FkmView) {
  return {
    columns: ["pattern", "severity", "matches", "lastMatchTime", "lastMatchText"],
    rows: fkm.keywords.map((k) => ({
      name: k.name,
      cells: {
        pattern: k.pattern,
        severity: k.severity,
        matches: String(k.matches),
        lastMatchTime: k.lastMatchTime,
        lastMatchText: k.lastMatchText,
      },
    })),
    headlines: { samplingStatus: fkm.samplingStatus, messagesScanned: String(fkm.messagesScanned) },
  };
}

/** The 400 for an empty dataview or row name in the path (`…/dataview/`). */
function emptyName(what: "dataview" | "row", pattern: string): VigilError {
  return new VigilError("BAD_REQUEST", {
    detail: `The ${what} name in the path is empty; name the ${what}: …${pattern}.`,
  });
}
