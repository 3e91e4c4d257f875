/**
 * A real PostgreSQL server for the benchmarks and the tests, started on 127.0.0.1 and a free port
 * in a temporary folder, and thrown away afterwards.
 *
 * It runs Debian's binaries (/usr/lib/postgresql/<version>/bin, or $TURNSPEC_PG_BIN).
 * PostgreSQL refuses to run as root: as root, initdb and pg_ctl run as the `postgres` OS
 * user through runuser. When no server can be started, `startPostgres` answers with the
 * reason, for a test to skip with; with CI=true it throws instead, so CI cannot skip.
 */
import { execFile, execFileSync, spawnSync } from "node:child_process";
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface PostgresServer {
  /** A URL of the server's `postgres` database, for administration. */
  readonly adminUrl: string;
  readonly port: number;
  /** The URL of a new, empty database. */
  createDatabase(name?: string): Promise<string>;
  /** Stops the server as an operator does (fast: open transactions rolled back, connections cut); `start` brings it back on the same port. */
  shutDown(): Promise<void>;
  start(): Promise<void>;
  stop(): void;
  /** CPU time the server's processes (the postmaster and its children) have run, in ns (Linux /proc); undefined where it cannot be read. */
  cpuTimeNs(): number | undefined;
}

export type StartedPostgres = { readonly server: PostgresServer } | { readonly skip: string };

const USER = "turnspec";

function binDir(): string | undefined {
  const given = process.env.TURNSPEC_PG_BIN;
  if (given) return existsSync(join(given, "initdb")) ? given : undefined;
  const root = "/usr/lib/postgresql";
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root)
    .filter((v) => existsSync(join(root, v, "bin", "initdb")))
    .sort((a, b) => Number(b) - Number(a));
  return versions.length === 0 ? undefined : join(root, versions[0]!, "bin");
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.on("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => resolve(typeof address === "object" && address ? address.port : 0));
    });
  });
}

/** Starts a server, or says why it cannot (throwing instead when CI=true). */
export async function startPostgres(): Promise<StartedPostgres> {
  try {
    return { server: await start() };
  } catch (error) {
    const reason = `PostgreSQL could not be started: ${(error as Error).message}`;
    if (process.env.CI === "true") throw new Error(`${reason} (CI=true: the PostgreSQL tests must run)`);
    return { skip: reason };
  }
}

async function start(): Promise<PostgresServer> {
  const bin = binDir();
  if (bin === undefined) throw new Error("no initdb found under /usr/lib/postgresql (install Debian's postgresql, or set TURNSPEC_PG_BIN)");
  const asRoot = process.getuid?.() === 0;
  let uid: number | undefined;
  let gid: number | undefined;
  if (asRoot) {
    const id = spawnSync("id", ["-u", "postgres"], { encoding: "utf8" });
    if (id.status !== 0) throw new Error("running as root and there is no `postgres` OS user to run the server as");
    uid = Number(id.stdout.trim());
    gid = Number(spawnSync("id", ["-g", "postgres"], { encoding: "utf8" }).stdout.trim());
  }
  const dir = mkdtempSync(join(tmpdir(), "turnspec-pg-"));
  if (uid !== undefined) chownSync(dir, uid, gid!);
  const run = (tool: string, args: string[]) => {
    const command = asRoot ? "runuser" : join(bin, tool);
    const argv = asRoot ? ["-u", "postgres", "--", join(bin, tool), ...args] : args;
    execFileSync(command, argv, { stdio: ["ignore", "pipe", "pipe"], timeout: 60_000 });
  };
  // Without blocking the event loop: what runs meanwhile (a gateway) sees the server go and come back.
  const runAsync = (tool: string, args: string[]) =>
    new Promise<void>((resolve, reject) => {
      const command = asRoot ? "runuser" : join(bin, tool);
      const argv = asRoot ? ["-u", "postgres", "--", join(bin, tool), ...args] : args;
      execFile(command, argv, { timeout: 60_000 }, (error, _stdout, stderr) =>
        error ? reject(new Error(`${tool} failed: ${stderr || error.message}`)) : resolve(),
      );
    });
  const data = join(dir, "data");
  const port = await freePort();
  // fsync off: a test server need not survive a power loss, and commits are much cheaper.
  const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=300`;
  try {
    run("initdb", ["-D", data, "-A", "trust", "-U", USER, "-E", "UTF8", "--no-sync", "--no-instructions"]);
    run("pg_ctl", ["-D", data, "-l", join(dir, "server.log"), "-w", "-t", "60", "-o", options, "start"]);
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    const stderr = (error as { stderr?: Buffer }).stderr?.toString().trim();
    throw new Error(stderr ? stderr.split("\n").slice(-3).join(" ") : (error as Error).message);
  }
  const adminUrl = `postgres://${USER}@127.0.0.1:${port}/postgres`;
  let count = 0;
  let stopped = false;
  const server: PostgresServer = {
    adminUrl,
    port,
    async createDatabase(name = `t${process.pid}_${++count}`) {
      const { default: pg } = await import("pg");
      const client = new pg.Client({ connectionString: adminUrl });
      await client.connect();
      try {
        await client.query(`CREATE DATABASE "${name}"`);
      } finally {
        await client.end();
      }
      return `postgres://${USER}@127.0.0.1:${port}/${name}`;
    },
    cpuTimeNs: () => serverCpuTimeNs(data),
    shutDown: () => runAsync("pg_ctl", ["-D", data, "-m", "fast", "-w", "-t", "60", "stop"]),
    start: () => runAsync("pg_ctl", ["-D", data, "-l", join(dir, "server.log"), "-w", "-t", "60", "-o", options, "start"]),
    stop() {
      if (stopped) return;
      stopped = true;
      running.delete(server);
      try {
        run("pg_ctl", ["-D", data, "-m", "immediate", "-w", "stop"]);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
  running.add(server);
  return server;
}

/** The CPU time of the server on `data` and of every process it started (its backends among them): live ones only. */
function serverCpuTimeNs(data: string): number | undefined {
  try {
    const postmaster = Number(readFileSync(join(data, "postmaster.pid"), "utf8").split("\n")[0]);
    let total = 0;
    for (const entry of readdirSync("/proc")) {
      if (!/^\d+$/.test(entry)) continue;
      const pid = Number(entry);
      let stat: string;
      try {
        stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      } catch {
        continue;
      }
      // Fields after the command's closing parenthesis: state, ppid, …
      const parent = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      if (pid !== postmaster && parent !== postmaster) continue;
      try {
        // A backend is one thread: its schedstat's first field is its CPU time in ns.
        total += Number(readFileSync(`/proc/${pid}/schedstat`, "utf8").split(" ")[0]);
      } catch {
        // Gone meanwhile.
      }
    }
    return total;
  } catch {
    return undefined;
  }
}

/** Servers started and not stopped: stopped when the process exits, however it got there. */
const running = new Set<PostgresServer>();
process.once("exit", () => {
  for (const server of [...running]) server.stop();
});
