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
/** Distinct columns one dataview may hold; beyond, a PUT is a 400 naming the limit. */
export const DEFAULT_MAX_COLUMNS_PER_DATAVIEW = 256; // columns
/** Longest cell text accepted by the probe; beyond, a PUT is a 400 naming the limit. */
export const DEFAULT_MAX_CELL_LENGTH = 8192; // UTF-16 code units
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
/** Series (cells and headlines) one hub entity may have; a message creating more is dead-lettered. */
export const DEFAULT_MAX_SERIES_PER_ENTITY = 100_000; // series
/**
 * Entities (and probes) one hub holds (`hub.maxEntities`); a message that would add one more is
 * dead-lettered with the reason. Bounds the hub's entity caches against a backfill client.
 */
export const DEFAULT_MAX_ENTITIES = 100_000; // entities
/**
 * Memory the hub's entity cache may hold (`hub.entityCacheMb`, src/hub/store/entity-cache.ts):
 * about 100 000 entities of a dozen short attributes. Entities beyond it are read from the store on
 * every entity request instead.
 */
export const DEFAULT_ENTITY_CACHE_MB = 128; // MiB (estimated bytes of the entities' strings and objects)
/**
 * Retention (`hub.retentionDays`): 0 keeps everything, the default, so backfilled history is never
 * removed unless a user asks. When set, the hub removes older samples and events at start and then
 * every RETENTION_INTERVAL_MS.
 */
export const DEFAULT_RETENTION_DAYS = 0; // days
export const RETENTION_INTERVAL_MS = 60 * 60_000; // ms (1 hour)
/** Whether the hub's API needs a bearer token. */
export const DEFAULT_SECURITY_ENABLED = true;
/** Lifetime of an access token. */
export const DEFAULT_TOKEN_LIFETIME = 300; // seconds (5 minutes)
/**
 * How long a gateway trusts the hub's answer on what a token grants (DESIGN 5.4a): a key removed
 * from the hub's setup stops working at the gateway at most this long after the hub reloads.
 */
export const TOKEN_GRANT_CACHE_MS = 5_000; // 5 s
/** Tokens whose grant a gateway remembers at most (the oldest is forgotten first). */
export const TOKEN_GRANT_CACHE_ENTRIES = 10_000; // tokens
/** How long a gateway waits for the hub's answer on a token's grant. */
export const TOKEN_GRANT_TIMEOUT_MS = 5_000; // 5 s

// Token endpoints (DESIGN 5.4; docs/security.md): what a flood of guesses can cost.
/** Token requests one remote address (an IPv6 /64) may burst, then refilled at the rate below. */
export const TOKEN_ADDRESS_BURST = 30; // requests
export const TOKEN_ADDRESS_RATE = 5; // requests per second
/** Token requests one configured client id may burst, then refilled at the rate below. */
export const TOKEN_CLIENT_BURST = 10; // requests
export const TOKEN_CLIENT_RATE = 1; // requests per second
/** Failed authentications in a row, per address or client id, that lock it out. */
export const TOKEN_LOCKOUT_FAILURES = 10; // failures
/** First lockout; each further lockout without a success in between doubles it, up to the max. */
export const TOKEN_LOCKOUT_MS = 60_000; // ms (1 minute)
export const TOKEN_LOCKOUT_MAX_MS = 15 * 60_000; // ms (15 minutes)
/** Remote addresses the token endpoints remember; the least recently seen is forgotten beyond. */
export const TOKEN_LIMITER_ADDRESSES = 10_000; // addresses
/** Secret checks (scrypt, Kerberos accept) running at once on the libuv pool the store shares. */
export const CREDENTIAL_CHECK_CONCURRENCY = 1; // checks
/** Secret checks waiting for a slot; one more is answered 503 with Retry-After. */
export const CREDENTIAL_CHECK_QUEUE = 32; // checks
/** How long a verified application-key secret is accepted again without scrypt. */
export const VERIFIED_SECRET_TTL_MS = 15 * 60_000; // ms (15 minutes)

// HTTP (DESIGN 3.2), shared by every vigil HTTP API
/** Largest request body any vigil HTTP API accepts; 413 beyond. */
export const DEFAULT_BODY_LIMIT_BYTES = 10 * 1024 * 1024; // 10 MiB
/** Largest body `POST /v0/messages` (backfill) accepts; 413 beyond. */
export const MESSAGES_BODY_LIMIT_BYTES = 256 * 1024 * 1024; // 256 MiB
/**
 * Messages of a backfill body committed per store transaction: the next part is parsed and checked
 * while the store claims and commits the previous one, as many as the in-process bus
 * hands the hub at most.
 */
export const BACKFILL_PART_MESSAGES = 5_000; // messages
/**
 * Worker threads that parse backfill bodies, at most (below that, one per core the hub may use
 * beyond the one its own thread and DuckDB's need): slices of one body go to each in turn, so the
 * store's next part is ready sooner. On 2 cores one worker: the peers bench (8.6 M samples, Node
 * 20, two rounds alternating) backfilled at 415-417 k samples/s with one and 384-416 k with two, for
 * 31.5-31.6 s of CPU against 32.0-34.7, and the hub peaked at 426-431 MiB against 454-468; the
 * backfill bench, 399 k against 389 k.
 */
export const BACKFILL_PARSE_WORKERS_MAX = 2;
/**
 * The young generation of each backfill parse worker (V8's `maxYoungGenerationSizeMb`). A worker's
 * objects live for one slice, so a small young generation only scavenges more often: the peers
 * bench's backfill (8.6 M samples, the hub alone) peaked at 412-416 MiB with 8 MB against 483-500
 * with V8's default, for the same CPU (30 s).
 */
export const BACKFILL_PARSE_WORKER_YOUNG_MB = 8; // MB
/**
 * How long the backfill parse workers stay once no body is being read: then they stop, and the next
 * backfill starts them again (about 0.3 s: a thread, its modules, the compiled schemas). A worker
 * that has parsed a backfill holds tens of MiB of heap that V8 does not give back while it idles:
 * two of them held 87 MiB after 30 bodies of 10 000 table lines, and still did 12 s later.
 */
export const BACKFILL_PARSE_WORKER_IDLE_MS = 10_000; // ms
/**
 * How long a parse worker waits with nothing to read before it runs a full collection of its own
 * heap (on its thread, 20-26 ms after the peers backfill), so the garbage of the bodies it read is
 * given back well before BACKFILL_PARSE_WORKER_IDLE_MS stops it. Each read resets the wait.
 */
export const BACKFILL_PARSE_WORKER_COLLECT_MS = 1_000; // ms
/**
 * Slow and idle clients (docs/security.md): a request's headers must arrive within
 * HTTP_HEADERS_TIMEOUT_MS and the whole request within HTTP_REQUEST_TIMEOUT_MS (a 10 MiB body at
 * 2 Mbit/s takes 40 s), checked every HTTP_TIMEOUT_CHECK_MS; an idle keep-alive connection closes
 * after HTTP_KEEP_ALIVE_TIMEOUT_MS. Responses (the message tap's stream) are not limited.
 */
export const HTTP_HEADERS_TIMEOUT_MS = 10_000; // ms
export const HTTP_REQUEST_TIMEOUT_MS = 60_000; // ms
export const HTTP_TIMEOUT_CHECK_MS = 1_000; // ms
export const HTTP_KEEP_ALIVE_TIMEOUT_MS = 5_000; // ms
/** Open connections one server accepts (beyond: closed at once), and per remote address. */
export const HTTP_MAX_CONNECTIONS = 4_096; // connections
export const HTTP_MAX_CONNECTIONS_PER_CLIENT = 1_024; // connections (applications behind one NAT share an address)

// Process (DESIGN 1)
/** Data directory of `vigil up|gateway|hub` when `--data-dir` is not given. */
export const DEFAULT_DATA_DIR = "./vigil-data"; // path, relative to the working directory
/**
 * Quiet time after the last change to the setup file's folder before the file is read again: an
 * editor's save (truncate + write, or write a temporary file + rename) is several events, one reload.
 */
export const SETUP_RELOAD_DEBOUNCE_MS = 100; // ms

// Hand-offs (DESIGN 1): every stage holds a bounded amount of unacknowledged work.
/** Most messages one publish batch carries, to a sink or from a bus consumer. */
export const MAX_BATCH_MESSAGES = 1_000; // messages
/** Messages one sink holds before the gateway stops taking probe changes (back-pressure). */
// Sized so that all the buffers between a probe and the store hold well under a second of what the
// hub commits (~15k messages/s on 2 cores): under overload, back-pressure keeps the PUT→queryable
// delay short instead of letting a backlog build. The buffer passes this by up to one link batch
// (a dataview PUT is one change but many row messages), so a full window of two batches still
// fills under load. Twice these buffers carry no more on the three processes over NATS and lengthen
// the PUT→queryable delay (bench/end-to-end.bench.ts, docs/performance.md).
export const SINK_BUFFER_MESSAGES = 1_000; // messages
/** Batches one sink has in flight (published, not yet acknowledged). */
export const SINK_WINDOW_BATCHES = 2; // batches
/** First and largest delay between retries of a failed publish or store commit. */
export const RETRY_INITIAL_MS = 100; // ms
export const RETRY_MAX_MS = 5_000; // ms
/** Probe change batches the gateway lets a probe have unacknowledged on its link (credit window). */
export const LINK_CREDIT_BATCHES = 2; // batches
/** Most changes one link batch carries. */
export const LINK_BATCH_CHANGES = 500; // changes
/** Changes a probe holds for its gateway before its ingest endpoints answer 503 (back-pressure). */
export const PROBE_OUTGOING_CHANGES = 20_000; // changes
/** Seconds a 503 for back-pressure or memory protection asks the client to wait. */
export const RETRY_AFTER_SECONDS = 1; // s
/** Interval of link heartbeats; a link silent for 3 intervals is taken as lost. */
export const LINK_HEARTBEAT_MS = 5_000; // ms
/** A clean stop (SIGTERM) finishes within this time, acknowledged work committed. */
export const STOP_DEADLINE_MS = 10_000; // ms
/** Entries of the hub's series-id cache (the rest are read from the store on demand). */
export const SERIES_CACHE_ENTRIES = 200_000; // series
/**
 * Bytes each of the hub's recency caches (src/hub/store/recency-cache.ts: the stores' series-id
 * caches) may hold, by its estimate, beside its count bound: names are client data of up to 1 KiB
 * each, so 200 000 series could otherwise hold hundreds of MiB of names.
 */
export const RECENCY_CACHE_BYTES = 64 * 1024 * 1024; // 64 MiB (estimate)
/** Name of the hub's dead-letter file, in its data dir. */
export const DEAD_LETTER_FILE = "dead-letter.ndjson";

// NATS JetStream bus (DESIGN 4.3, 5.5)
/** How long JetStream remembers a `Nats-Msg-Id` to drop a duplicate publish. */
export const NATS_DUPLICATE_WINDOW_MS = 120_000; // ms (2 min)
/** Age after which the stream drops a message (the bound of the stream; a hub away longer misses it). */
export const NATS_STREAM_MAX_AGE_MS = 7 * 24 * 60 * 60 * 1000; // ms (7 days)
/** Longest the sink waits for one publish acknowledgement (and for a lost connection to come back). */
export const NATS_PUBLISH_TIMEOUT_MS = 5_000; // ms
/** Wait between two reconnection attempts of an established connection (the client retries for ever). */
export const NATS_RECONNECT_WAIT_MS = 1_000; // ms
/** Interval of client pings; 3 unanswered pings mark the connection as lost. */
export const NATS_PING_INTERVAL_MS = 10_000; // ms
/** Longest a close waits for what was sent (acks, publishes) to reach the server. */
export const NATS_CLOSE_FLUSH_MS = 1_000; // ms
/** Durable consumer name the hubs share (the scale-out deployment, DESIGN 5.5). */
export const NATS_DEFAULT_DURABLE = "vigil-hub";
/** Time the server waits for a hub's ack before it delivers the message again (to any hub). */
export const NATS_ACK_WAIT_MS = 30_000; // ms
/** Messages the durable consumer has delivered and not yet had acknowledged, across all hubs. */
export const NATS_MAX_ACK_PENDING = 20_000; // messages
/** Longest one pull request waits for messages; a shorter one costs a request per interval when idle. */
export const NATS_FETCH_EXPIRES_MS = 2_000; // ms (the client's minimum is 1 s)

// Probe link, gateway and hub bounds
/** Batches waiting for the consumer before publish is refused. */
export const MEMORY_BUS_MAX_PENDING_BATCHES = 64; // batches
/** Dataviews one sampler may hold on the gateway; the probe refuses more (PROBE_MAX_DATAVIEWS_PER_SAMPLER). */
export const GATEWAY_MAX_DATAVIEWS_PER_SAMPLER = 1_000; // dataviews
/**
 * Bytes a message-tap client may have waiting in its socket buffer; beyond, the client is too
 * slow and is dropped (with a log line) rather than letting the gateway's memory grow.
 */
export const TAP_MAX_BUFFERED_BYTES = 8 * 1024 * 1024; // 8 MiB
/** Message-tap clients one gateway serves at once; one more is answered 503. */
export const TAP_MAX_CLIENTS = 64; // clients
/** How long a tap client that is being let go may take to read its final event before it is cut. */
export const TAP_END_GRACE_MS = 5_000; // ms
/** Address the gateway listens on unless told otherwise (secure default, docs/decisions.md). */
export const DEFAULT_GATEWAY_HOST = "127.0.0.1";
/** First delay before reconnecting after a lost link; doubles up to LINK_RECONNECT_MAX_MS. */
export const LINK_RECONNECT_MIN_MS = 250; // ms
/** Longest delay between two connection attempts; also the wait after a refusal. */
export const LINK_RECONNECT_MAX_MS = 10_000; // ms
/**
 * Estimated size of the outgoing buffer beyond which ingest answers 503, whatever the count: a
 * queued PUT dataview holds a whole dataview.
 */
export const PROBE_OUTGOING_BYTES = 256 * 1024; // 256 KiB (estimate)
/**
 * Dataviews one sampler may hold: every map a client can grow has a bound (house rules). Far above
 * what a real source pushes; a PUT of a new dataview beyond it is a 400 (TOO_MANY_DATAVIEWS).
 */
export const PROBE_MAX_DATAVIEWS_PER_SAMPLER = 1_000; // dataviews
/**
 * Streams one rest-api sampler may hold (DESIGN 3.4); also never more than the sampler's row limit,
 * since its Streams Dataview has one row per stream. A PUT creating one more is a 400.
 */
export const PROBE_MAX_STREAMS_PER_SAMPLER = 100; // streams
/**
 * Client CA files (per-sampler `clientCaCertificate.path` and the `-ssl-certificate-chain` file) a
 * probe keeps parsed for mTLS (DESIGN 3.5); the setup's files beyond are refused with a logged
 * error. A file larger than the byte bound is refused too.
 */
export const PROBE_MAX_CLIENT_CA_FILES = 256; // files
export const PROBE_MAX_CLIENT_CA_FILE_BYTES = 1024 * 1024; // 1 MiB
/** Time between two RSS reads; also how often a waiting gateway looks again. */
export const MEMORY_CHECK_INTERVAL_MS = 250; // ms
/**
 * Bounds of DuckDB's `memory_limit`, which the hub sizes from the machine (duckdb-settings.ts): an
 * eighth of the memory the process may use (the smaller of the machine's and its cgroup's limit),
 * within these bounds. The upper bound keeps `vigil up` under the end-to-end load below 512 MiB of
 * RSS (docs/performance.md): DuckDB fills its buffer pool up to the limit before it evicts.
 * Sorting and joins spill to DuckDB's temporary folder beside the file past it; an aggregation that
 * cannot spill fails the query (logged).
 */
export const DUCKDB_MEMORY_LIMIT_MIN_MIB = 128; // MiB
export const DUCKDB_MEMORY_LIMIT_MAX_MIB = 384; // MiB
export const DUCKDB_MEMORY_SHARE = 1 / 8; // of the memory the process may use
/**
 * DuckDB's cache of table blocks the store keeps after a commit or a read (duckdb-block-cache.ts):
 * the hot blocks of the latest writes and of the entity, series and digest look-ups fit in it, and
 * a backfill or a scan of a day does not leave the day's blocks in the hub's memory. Looked at no
 * more often than every DUCKDB_BLOCK_CACHE_CHECK_MS.
 */
export const DUCKDB_BLOCK_CACHE_MIB = 16; // MiB
export const DUCKDB_BLOCK_CACHE_CHECK_MS = 250; // ms
/**
 * Back-off between attempts of the DuckDB store to reopen its file after a fatal error: the first
 * attempt at once, then doubling from the minimum up to the maximum.
 */
export const STORE_REOPEN_BACKOFF_MIN_MS = 500; // ms
export const STORE_REOPEN_BACKOFF_MAX_MS = 30_000; // ms
/** How long `/v0/ping` and `/v1/status` wait for the store to answer a trivial statement. */
export const STORE_PING_TIMEOUT_MS = 5_000; // ms
/**
 * `/v0/ping` answers ready at once while the store answered a ping less than this ago (and none
 * failed since), so it never waits behind a long store statement (src/hub/store-ping.ts).
 */
export const STORE_PING_FRESH_MS = 5_000; // ms
/** Age of the last answer past which a `/v0/ping` starts another store ping (one at a time). */
export const STORE_PING_REFRESH_MS = 1_000; // ms
/**
 * How far V8 lets a long-running process's heap grow past what survived its last full collection,
 * in percent (V8's `--heap-growing-percent`, set at start by run-service.ts unless the process was
 * started with its own). V8's default grows it up to 4× on a machine with memory to spare: under
 * the end-to-end load `vigil up` kept ~40 MB live and let its old space reach 150–160 MB between
 * collections (docs/performance.md). 100 means 2×.
 */
export const HEAP_GROWING_PERCENT = 100; // percent
/**
 * The largest semi-space of a long-running process's young generation, in MB (V8's
 * `--max-semi-space-size`, set when the process starts by young-generation.ts unless it was started
 * with its own). Node 20's V8 bounds it at 16 MB on a 64-bit machine; Node 24's sizes it from the
 * machine's memory, 64 MB on a 24 GiB machine (a new space of 128 MB), and `vigil up` peaked at
 * 564–574 MiB under the end-to-end load there against 405 MiB on Node 20
 * (docs/performance.md). 16 keeps Node 20's bound; the backfill's rate did not move with it.
 */
export const MAX_SEMI_SPACE_MB = 16; // MB
/**
 * glibc's threshold from which malloc serves a block by `mmap`, fixed for the service processes
 * (`GLIBC_TUNABLES`, young-generation.ts): glibc's own starting value, which a fixed setting keeps
 * from growing, so large freed blocks go back to the system (docs/performance.md).
 */
export const MALLOC_MMAP_THRESHOLD_BYTES = 131_072; // bytes
/** A batch is closed once its changes are estimated at this size (one change may exceed it). */
export const LINK_BATCH_TARGET_BYTES = 128 * 1024; // 128 KiB (estimate, UTF-16 code units)
/**
 * Room a link frame keeps for the changes batched before a large one: a batch closes once its
 * changes are estimated at LINK_BATCH_TARGET_BYTES, and a UTF-16 code unit is at most 6 bytes of
 * JSON text (`\u0001`). A dataview or row the probe takes must fit `limits.linkFrameBytes` less
 * this, so the frame that carries it never passes the limit the gateway enforces.
 */
export const LINK_FRAME_HEADROOM_BYTES = 6 * LINK_BATCH_TARGET_BYTES; // 768 KiB
/** The smallest `limits.linkFrameBytes`: the headroom and as much again for one change. */
export const MIN_LINK_FRAME_BYTES = 2 * LINK_FRAME_HEADROOM_BYTES; // 1.5 MiB
/**
 * Columns and cell length a gateway accepts on a link whatever its setup says. The setup's limits
 * are enforced where data enters (the probe's ingest endpoints); the link only refuses what no
 * probe can produce, so a reload that lowers a limit never breaks the links of probes that hold
 * data taken under the old one (their state would fail forever).
 */
export const LINK_MAX_COLUMNS = 65_536; // columns
export const LINK_MAX_CELL_LENGTH = 1024 * 1024; // UTF-16 code units
/**
 * Longest path segment the probe's router matches (raw, percent-encoded): Node's default limit on
 * a request's header fields (16 KiB), which bounds the request line anyway. The names in a path are
 * then checked against the setup's `limits.nameBytes` (src/probe/ingest-limits.ts), so a name
 * of 1,024 bytes (3,072 characters percent-encoded at most) is addressable; Fastify's default
 * of 100 characters refused most of them.
 */
export const PROBE_MAX_PARAM_LENGTH = 16 * 1024; // characters
/** Backfill requests handled at once; more get a 503 with Retry-After (each may hold 256 MiB). */
export const MAX_CONCURRENT_BACKFILLS = 2;
/** Time a probe waits for the WebSocket handshake before it gives up and retries. */
export const LINK_HANDSHAKE_TIMEOUT_MS = 10_000; // ms

// Probe link authentication and transport bounds (DESIGN 5.4b; docs/security.md, "The probe link")
/** Shortest link secret a probe may have (`linkSecret`, `linkSecretFile`, `VIGIL_LINK_SECRET`). */
export const LINK_SECRET_MIN_LENGTH = 16; // characters
/** Time a link has, from its upgrade, to say `hello`; then it is closed (CLOSE_HELLO_TIMEOUT). */
export const LINK_HELLO_TIMEOUT_MS = 5_000; // ms
/**
 * Links that have not completed `hello` (their upgrade accepted, the hello not yet seen) one
 * gateway holds at once; one more upgrade is answered 503 with Retry-After, counted and logged.
 */
export const LINK_MAX_UNAUTHENTICATED = 16; // connections
/**
 * Time a link closed by this side gets to finish the WebSocket closing handshake before its socket
 * is cut (`ws` would wait 30 s for a peer that never answers the close frame).
 */
export const LINK_CLOSING_GRACE_MS = 1_000; // ms
/** A refusal of the same kind (401, 503, hello timeout, protocol error) is logged at most this often. */
export const LINK_REFUSAL_LOG_INTERVAL_MS = 60_000; // ms (1 min)
/**
 * Messages the hubs' durable consumer may lag behind the stream before the NATS target holds back its
 * acknowledgements (back-pressure through the bus): about a seventh of a second of what a hub commits
 * (see SINK_BUFFER_MESSAGES). 1,000 cost about a sixth of the throughput (the hub's pulls came
 * back with fewer messages than a batch) without shortening the delay.
 */
export const NATS_MAX_CONSUMER_LAG = 2_000; // messages
/** How often the NATS target looks at the consumer's lag while it matters. */
export const NATS_LAG_CHECK_MS = 50; // ms
/**
 * Longest an ingest request waits for room in the probe's outgoing buffer before it is answered 503,
 * and how many requests may wait at once and how many body bytes they may hold together (the rest
 * get the 503 at once). A request waits only within both bounds, except that one request may wait
 * whatever its size when none does: at most max(PROBE_BACKLOG_WAIT_BYTES, the body limit) of bodies
 * is held. Row PUTs of ~200 bytes then wait, one per connection: with a count of 8 alone, 42 of a
 * client's 50 connections would spin on immediate 503s whenever the hub pauses, while 8 dataview
 * bodies could hold 80 MiB.
 */
export const PROBE_BACKLOG_WAIT_MS = 250; // ms
export const PROBE_BACKLOG_WAITERS = 256; // requests
export const PROBE_BACKLOG_WAIT_BYTES = 16 * 1024 * 1024; // 16 MiB of request bodies

// Gateway events and state (DESIGN 4.1–4.3)
/** Snoozes plus user assignments the gateway holds at once; a command beyond is refused (409). */
export const GATEWAY_MAX_ITEM_STATES = 10_000; // snoozes + assignments
/**
 * How often the gateway releases the snoozes and assignments whose `untilTime` has come, and the
 * longest it waits to write changed severities to its state file (commands write at once).
 */
export const STATE_SAVE_INTERVAL_MS = 1_000; // ms
/** Name of the gateway's file of snoozes and assignments, in its data dir (written at every command). */
export const GATEWAY_STATE_FILE = "gateway-state.json";
/** Name of the gateway's file of last published severities, in its data dir. */
export const GATEWAY_SEVERITIES_FILE = "gateway-severities.json";
/** Longest `user`, `comment`, `assignedTo` or `untilValueNot` text of a command. */
export const COMMAND_MAX_TEXT = 4_096; // UTF-16 code units

// Self-metrics: Prometheus text format at METRICS_PATH on every process
/** Where every vigil process serves its self-metrics. */
export const METRICS_PATH = "/metrics";
/** Buckets of the HTTP request duration histogram, in seconds (0.5 ms to 10 s). */
export const HTTP_DURATION_BUCKETS_S = [
  0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
] as const; // seconds
/** Buckets of the JetStream publish and store commit histograms, in seconds (1 ms to 30 s). */
export const BATCH_DURATION_BUCKETS_S = [
  0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30,
] as const; // seconds
