/**
 * The bridge inside the sandbox of a turn whose network is `restricted`: the command's
 * network namespace has nothing but its own loopback, so the bridge listens on a loopback
 * TCP port there (what HTTP_PROXY names) and carries each connection to the gateway's
 * filtering proxy over its Unix socket (network-proxy.ts), then runs the command and
 * exits with its status. It is node itself (the file system is bound read-only, so the
 * gateway's node is there), given as an inline script so it runs the same from the
 * sources and from the built package.
 */

/** The loopback port the bridge listens on inside the sandbox (its network namespace is the command's alone). */
export const PROXY_BRIDGE_PORT = 3128;

/**
 * The bridge, run as `node -e PROXY_BRIDGE_SOURCE -- <socket> <port> <command…>`. The command
 * starts only once the port is listening; its signal is passed on as the bridge's own end.
 */
export const PROXY_BRIDGE_SOURCE = `
const net = require("node:net");
const { spawn } = require("node:child_process");
const [socketPath, port, file, ...args] = process.argv.slice(1);
const server = net.createServer((inside) => {
  const outside = net.connect(socketPath);
  inside.pipe(outside);
  outside.pipe(inside);
  inside.on("error", () => outside.destroy());
  outside.on("error", () => inside.destroy());
  inside.on("close", () => outside.destroy());
  outside.on("close", () => inside.destroy());
});
server.on("error", (error) => {
  process.stderr.write("turnspec sandbox: the network proxy bridge could not listen on 127.0.0.1:" + port + ": " + error.message + "\\n");
  process.exit(125);
});
server.listen(Number(port), "127.0.0.1", () => {
  const child = spawn(file, args, { stdio: "inherit" });
  child.on("error", (error) => {
    process.stderr.write("turnspec sandbox: " + file + " could not be started: " + error.message + "\\n");
    process.exit(127);
  });
  child.on("exit", (code, signal) => {
    if (signal) process.kill(process.pid, signal);
    process.exit(code ?? 1);
  });
});
`;

/** The proxy variables a command under the bridge gets, both spellings, pointing at the bridge. */
export function proxyEnvironment(port = PROXY_BRIDGE_PORT): Record<string, string> {
  const url = `http://127.0.0.1:${port}`;
  return { HTTP_PROXY: url, HTTPS_PROXY: url, ALL_PROXY: url, http_proxy: url, https_proxy: url, all_proxy: url };
}
