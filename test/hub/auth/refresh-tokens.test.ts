/**
 * The refresh-token store: single use, expiry and the cap on live tokens (DESIGN 5.4).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { RefreshTokens } from "../../../src/hub/auth/refresh-tokens.js";

const app = (sub: string) => ({ sub, method: "app-key" as const });

function clock(start = 1_000_000) {
  let now = start;
  return {
    now: () => now,
    advance(ms: number): void {
      now += ms;
    },
  };
}

const cases: [name: string, run: () => void][] = [
  [
    "a token is spent once and gives its owner",
    () => {
      const store = new RefreshTokens();
      const token = store.issue(app("app"));
      assert.deepEqual(store.spend(token), app("app"));
      assert.equal(store.spend(token), undefined);
    },
  ],
  ["an unknown token gives nothing", () => assert.equal(new RefreshTokens().spend("nope"), undefined)],
  [
    "owner() names the owner without spending the token, and nothing once it is spent or expired",
    () => {
      const time = clock();
      const store = new RefreshTokens({ lifetimeMs: 10, now: time.now });
      const token = store.issue({ sub: "alice@GOOD.TEST", method: "kerberos" });
      assert.deepEqual(store.owner(token), { sub: "alice@GOOD.TEST", method: "kerberos" });
      assert.deepEqual(store.owner(token), { sub: "alice@GOOD.TEST", method: "kerberos" });
      assert.deepEqual(store.spend(token), { sub: "alice@GOOD.TEST", method: "kerberos" });
      assert.equal(store.owner(token), undefined);
      const late = store.issue(app("a"));
      time.advance(10);
      assert.equal(store.owner(late), undefined);
    },
  ],
  [
    "a token is 32 random bytes in base64url, different each time",
    () => {
      const store = new RefreshTokens();
      const [a, b] = [store.issue(app("app")), store.issue(app("app"))];
      assert.match(a, /^[A-Za-z0-9_-]{43}$/);
      assert.notEqual(a, b);
    },
  ],
  [
    "a token is refused at its expiry and accepted just before",
    () => {
      const time = clock();
      const store = new RefreshTokens({ lifetimeMs: 1000, now: time.now });
      const [early, late] = [store.issue(app("a")), store.issue(app("b"))];
      time.advance(999);
      assert.deepEqual(store.spend(early), app("a"));
      time.advance(1);
      assert.equal(store.spend(late), undefined);
    },
  ],
  [
    "the cap evicts the oldest live token",
    () => {
      const store = new RefreshTokens({ maxTokens: 2 });
      const [first, second, third] = [store.issue(app("1")), store.issue(app("2")), store.issue(app("3"))];
      assert.equal(store.size, 2);
      assert.equal(store.spend(first), undefined);
      assert.deepEqual(store.spend(second), app("2"));
      assert.deepEqual(store.spend(third), app("3"));
    },
  ],
  [
    "issuing drops expired tokens",
    () => {
      const time = clock();
      const store = new RefreshTokens({ lifetimeMs: 10, now: time.now });
      store.issue(app("old"));
      store.issue(app("old"));
      time.advance(10);
      store.issue(app("new"));
      assert.equal(store.size, 1);
    },
  ],
];

for (const [name, run] of cases) test(name, run);
