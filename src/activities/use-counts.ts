/**
 * Runs `work` with `key` counted in `counts` while it runs (several at once count several times);
 * the key leaves the map when its last use ends, so `counts.has(key)` means "in use now".
 */
export async function whileCounted<T>(
  counts: Map<string, number>,
  key: string,
  work: () => Promise<T>,
): Promise<T> {
  counts.set(key, (counts.get(key) ?? 0) + 1);
  try {
    return await work();
  } finally {
    const count = (counts.get(key) ?? 1) - 1;
    if (count > 0) counts.set(key, count);
    else counts.delete(key);
  }
}
