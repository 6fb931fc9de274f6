/**
 * The store's one bounded-concurrency map (session reads and writes, workspace scans and uploads).
 */

/**
 * Runs `work` over `items` with at most `limit` calls in flight and resolves with the results in
 * input order.
 *
 * Failure: the returned promise rejects with the first failure as soon as it happens, and no
 * further item is started after it (a failed scan stops reading and uploading instead of going
 * on in the background). Calls already in flight at that moment are neither awaited nor
 * cancelled; their results and failures are dropped.
 */
export async function mapWithLimit<T, R>(
  items: Iterable<T>,
  limit: number,
  work: (item: T, index: number) => Promise<R>,
): Promise<R[]> {
  if (!Number.isSafeInteger(limit) || limit < 1) {
    throw new RangeError(`limit must be a positive integer, got ${limit}`);
  }
  const iterator = items[Symbol.iterator]();
  const results: R[] = [];
  let next = 0;
  let failed = false;
  const worker = async () => {
    while (!failed) {
      const item = iterator.next();
      if (item.done) return;
      const index = next++;
      try {
        results[index] = await work(item.value, index);
      } catch (error) {
        failed = true;
        throw error;
      }
    }
  };
  await Promise.all(Array.from({ length: limit }, worker));
  return results;
}
