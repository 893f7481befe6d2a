// Verifies one captured ams delivery with the public `standardwebhooks`
// package, exactly as a receiver would. Input: a JSON file with
// {secret, headers, body} and optionally now (Unix seconds): the receiver's
// clock, for deliveries made on a test's injected clock (the library
// refuses timestamps more than 5 minutes from its clock). Exit 0 and print
// the verified event id, or exit 1.
import { readFileSync } from "node:fs";
import { Webhook } from "standardwebhooks";

const { secret, headers, body, now } = JSON.parse(readFileSync(process.argv[2], "utf8"));
if (now !== undefined) {
  Date.now = () => now * 1000;
}
try {
  const event = new Webhook(secret).verify(body, headers);
  console.log(`verified ${event.id}`);
} catch (err) {
  console.error(`verification failed: ${err.message}`);
  process.exit(1);
}
