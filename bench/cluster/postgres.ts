/**
 * PostgreSQL 15 (Debian's package) for Temporal's persistence and SQL visibility. PostgreSQL
 * refuses to run as root, so its data folder belongs to the `postgres` user and its commands run
 * through `runuser`. Tuned for this machine (24 GB, 2 cores) the way a production instance is:
 * fsync and synchronous commit stay on. The cluster is created on first start only.
 */
import { appendFileSync, existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { type ServiceProcess, startServiceProcess } from "../../src/cli/devstack/service-process";
import { clusterDir, POSTGRES_PORT, POSTGRES_TEMPORAL_USER } from "./layout";
import { type ClusterPart, run, startPart, waitUntil } from "./parts";

const BIN = "/usr/lib/postgresql/15/bin";
const dataDir = join(clusterDir, "postgres");
const START_TIMEOUT_MS = 60_000;

/**
 * Six Temporal processes with up to 20 + 10 connections each, plus the SQL tool: the default of
 * 100 is too few. The rest sizes memory for this machine (shared buffers about 1/24 of RAM, as
 * the database is small) and keeps checkpoints apart.
 */
const TUNING = `
listen_addresses = '127.0.0.1'
port = ${POSTGRES_PORT}
unix_socket_directories = '${dataDir}'
max_connections = 250
shared_buffers = 1GB
effective_cache_size = 6GB
work_mem = 8MB
maintenance_work_mem = 256MB
wal_buffers = 16MB
max_wal_size = 4GB
checkpoint_timeout = 15min
checkpoint_completion_target = 0.9
random_page_cost = 1.1
autovacuum_naptime = 10s
autovacuum_vacuum_scale_factor = 0.05
track_io_timing = on
`;

const asPostgres = (command: string, args: string[]) =>
  run("runuser", ["-u", "postgres", "--", join(BIN, command), ...args]);

function psql(sql: string, database = "postgres"): string {
  return run(join(BIN, "psql"), [
    "-h",
    "127.0.0.1",
    "-p",
    String(POSTGRES_PORT),
    "-U",
    "postgres",
    "-d",
    database,
    "-tAc",
    sql,
  ]).trim();
}

function initializeOnce(): void {
  if (existsSync(join(dataDir, "PG_VERSION"))) return;
  mkdirSync(clusterDir, { recursive: true });
  run("install", ["-d", "-o", "postgres", "-g", "postgres", "-m", "0700", dataDir]);
  asPostgres("initdb", ["-D", dataDir, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--locale=C.UTF-8"]);
  appendFileSync(join(dataDir, "postgresql.conf"), TUNING);
}

function startPostgresProcess(): Promise<ServiceProcess> {
  // Run in the foreground (not pg_ctl's daemon) so it lives in its own process group like every
  // other part: stopped as a group, never orphaned, its backends' CPU read under one tree.
  const process = startServiceProcess(
    "postgres",
    "runuser",
    ["-u", "postgres", "--", join(BIN, "postgres"), "-D", dataDir],
    { logFile: join(clusterDir, "postgres.log") },
  );
  return waitUntil(
    "PostgreSQL",
    async () => {
      run(join(BIN, "pg_isready"), ["-q", "-h", "127.0.0.1", "-p", String(POSTGRES_PORT)]);
      return true;
    },
    { timeoutMs: START_TIMEOUT_MS, isAlive: process.isAlive },
  ).then(
    () => process,
    async (error) => {
      await process.stop();
      throw error;
    },
  );
}

/** Initializes (first start), starts PostgreSQL, and makes Temporal's login role. */
export async function startPostgres(): Promise<ClusterPart> {
  initializeOnce();
  const part = await startPart("postgres", "postgres", startPostgresProcess);
  if (psql(`select 1 from pg_roles where rolname = '${POSTGRES_TEMPORAL_USER}'`) !== "1") {
    psql(`CREATE ROLE ${POSTGRES_TEMPORAL_USER} LOGIN CREATEDB PASSWORD '${POSTGRES_TEMPORAL_USER}'`);
  }
  return part;
}

/** True when `database` exists. */
export function databaseExists(database: string): boolean {
  return psql(`select 1 from pg_database where datname = '${database}'`) === "1";
}
