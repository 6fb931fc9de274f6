/** A dev server that dies before listening (a port taken meanwhile) is started again on new ports. */
import { startOnFreePorts } from "../../../src/cli/devstack/ports";

const collided = () => new Error("S3 server did not start (process exited before listening on port 40339)");

test("a server that exits before listening is started again, up to 3 times", async () => {
  let tries = 0;
  const start = async () => {
    tries += 1;
    if (tries < 3) throw collided();
    return "up";
  };
  await expect(startOnFreePorts(false, start)).resolves.toBe("up");
  expect(tries).toBe(3);

  tries = 0;
  const alwaysCollides = async () => {
    tries += 1;
    throw collided();
  };
  await expect(startOnFreePorts(false, alwaysCollides)).rejects.toThrow(/exited before listening/);
  expect(tries).toBe(3);
});

test("fixed ports, or any other failure, fail at once", async () => {
  let tries = 0;
  const failing = (error: Error) => async () => {
    tries += 1;
    throw error;
  };
  await expect(startOnFreePorts(true, failing(collided()))).rejects.toThrow(/exited before listening/);
  await expect(
    startOnFreePorts(false, failing(new Error("S3 server did not start (timeout)"))),
  ).rejects.toThrow(/timeout/);
  expect(tries).toBe(2);
});
