/**
 * Every default of vigil in one place (STYLE 10), each with its unit. The setup loader fills these
 * into the loaded `Setup`; other modules import the HTTP limits from here rather than repeating them.
 * Values follow DESIGN 1–3 and the seed's sampler configuration tables.
 */

// Gateway (DESIGN 1, 2)
/** TCP port of the gateway's HTTP API and probe link. */
export const DEFAULT_GATEWAY_PORT = 7039; // TCP port
/** When > 0, overrides every sampler's rowLimit; 0 means "use each sampler's own". */
export const DEFAULT_CUSTOM_DATAVIEW_MAX_ROWS = 0; // rows (0 = off)
/** Where public-v2 messages go when the setup names no sink: the in-process bus. */
export const DEFAULT_PUBLISH = ["memory"] as const;
/** JetStream stream name for a `nats` publish sink. */
export const DEFAULT_NATS_STREAM = "VIGIL";
/** Subject prefix for a `nats` publish sink: subjects are `<prefix>.entities|metrics|events`. */
export const DEFAULT_NATS_SUBJECT_PREFIX = "vigil";

// Probe (seed B "Probe-level settings", DESIGN 3.5)
/** Address the probe's ingest endpoints listen on. */
export const DEFAULT_PROBE_HOSTNAME = "127.0.0.1";
/** Port for plain HTTP ingest. */
export const DEFAULT_REST_API_HTTP_PORT = 7136; // TCP port
/** Port for HTTPS ingest, used only in secure mode. */
export const DEFAULT_REST_API_HTTPS_PORT = 7137; // TCP port
/** Memory-protection budget of the probe process. */
export const DEFAULT_MEMORY_LIMIT_MB = 2048; // MiB of resident memory
/** Fraction of the budget at which ingest answers 503. */
export const DEFAULT_MEMORY_RATIO = 0.9; // ratio in (0, 1]

// rest-api sampler (seed B "Sampler configuration fields")
/** Messages each stream holds between two consumptions; the oldest is dropped beyond. */
export const DEFAULT_BUFFER_SIZE = 1000; // messages per stream
/** Rows kept per dataview. */
export const DEFAULT_ROW_LIMIT = 200; // rows per dataview
/** Whether HTTPS clients must present a certificate (mTLS). */
export const DEFAULT_VERIFY_CLIENT_CERTIFICATE = false;
/** Client CA certificate: disabled and empty, so the `-ssl-certificate-chain` file is used. */
export const DEFAULT_CLIENT_CA_CERTIFICATE = { enabled: false, path: "" } as const;
/** Type of a schema column whose type is not declared (DESIGN 5.3). */
export const DEFAULT_COLUMN_TYPE = "float64";
/** Unit of a schema column whose unit is not declared (DESIGN 5.3). */
export const DEFAULT_COLUMN_UNIT = "none";

// fkm sampler (DESIGN 3.4)
/** Time between two consumptions of the source stream. */
export const DEFAULT_FKM_SAMPLE_INTERVAL = 20; // seconds

// Rules (DESIGN 2)
/** Rule target fields that are left out match every name. */
export const DEFAULT_RULE_TARGET_WILDCARD = "*";

// Hub (DESIGN 1, 5.4)
/** TCP port of the hub's query API and web console. */
export const DEFAULT_HUB_PORT = 8081; // TCP port
/** Whether the hub's API needs a bearer token. */
export const DEFAULT_SECURITY_ENABLED = true;
/** Lifetime of an access token. */
export const DEFAULT_TOKEN_LIFETIME = 300; // seconds (5 minutes)

// HTTP (DESIGN 3.2), shared by every vigil HTTP API
/** Largest request body any vigil HTTP API accepts; 413 beyond. */
export const DEFAULT_BODY_LIMIT_BYTES = 10 * 1024 * 1024; // 10 MiB
/** Largest body `POST /v0/messages` (backfill) accepts; 413 beyond. */
export const MESSAGES_BODY_LIMIT_BYTES = 256 * 1024 * 1024; // 256 MiB

// Process (DESIGN 1)
/** Data directory of `vigil up|gateway|hub` when `--data-dir` is not given. */
export const DEFAULT_DATA_DIR = "./vigil-data"; // path, relative to the working directory
