/**
 * The client side of `queryClientInChild()` (bench/load.ts): for each message, one request with
 * `fetch`, its answer read whole as text, as an application reads a query's answer; sends back the
 * status, the answer's length and, when the status is not 200, its first 300 characters. Not a
 * benchmark by itself.
 */
import type { ChildQuery, ChildQueryAnswer } from "./load.js";

process.on("message", (message) => {
  const { url, method, headers, body } = message as ChildQuery;
  const answered = (answer: ChildQueryAnswer) => process.send?.(answer);
  fetch(url, { method, headers, ...(body === undefined ? {} : { body }) }).then(
    async (response) => {
      const text = await response.text();
      answered({
        status: response.status,
        length: text.length,
        ...(response.status === 200 ? {} : { head: text.slice(0, 300) }),
      });
    },
    (error: unknown) => answered({ status: 0, length: 0, head: String(error) }),
  );
});
process.once("disconnect", () => process.exit(0));
