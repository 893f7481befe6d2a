// A minimal browser for the OAuth tests: it follows the server's
// redirects, keeps cookies, and submits the sign-in and consent forms the
// way a user's browser would (same-origin Origin and Sec-Fetch-Site).

interface Form {
  action: string;
  fields: Array<[string, string]>;
}

function decodeEntities(s: string): string {
  return s.replace(/&(#x[0-9a-f]+|#\d+|amp|lt|gt|quot|apos);/gi, (_m, e: string) => {
    const l = e.toLowerCase();
    if (l === "amp") return "&";
    if (l === "lt") return "<";
    if (l === "gt") return ">";
    if (l === "quot") return '"';
    if (l === "apos") return "'";
    return String.fromCodePoint(l.startsWith("#x") ? parseInt(l.slice(2), 16) : parseInt(l.slice(1), 10));
  });
}

function attr(tag: string, name: string): string | undefined {
  const m = new RegExp(`\\s${name}="([^"]*)"`, "i").exec(tag);
  return m ? decodeEntities(m[1]!) : undefined;
}

/** The form of the page whose action is action: hidden and text inputs, checked checkboxes. */
function findForm(html: string, action: string): Form {
  for (const m of html.matchAll(/<form\b([^>]*)>([\s\S]*?)<\/form>/gi)) {
    if (attr(m[1]!, "action") !== action) continue;
    const fields: Array<[string, string]> = [];
    for (const input of m[2]!.matchAll(/<input\b[^>]*>/gi)) {
      const tag = input[0];
      const name = attr(tag, "name");
      if (!name) continue;
      const type = (attr(tag, "type") ?? "text").toLowerCase();
      if (type === "checkbox" && !/\schecked\b/i.test(tag)) continue;
      fields.push([name, attr(tag, "value") ?? ""]);
    }
    return { action, fields };
  }
  throw new Error(`no form with action ${action} in:\n${html.slice(0, 2000)}`);
}

export class Browser {
  readonly #cookies = new Map<string, string>();
  constructor(readonly origin: string) {}

  async #fetch(url: string, init: RequestInit = {}): Promise<Response> {
    const headers = new Headers(init.headers);
    if (this.#cookies.size) headers.set("Cookie", [...this.#cookies].map(([k, v]) => `${k}=${v}`).join("; "));
    const res = await fetch(new URL(url, this.origin), { ...init, headers, redirect: "manual" });
    for (const c of res.headers.getSetCookie()) {
      const [pair] = c.split(";");
      const i = pair!.indexOf("=");
      this.#cookies.set(pair!.slice(0, i).trim(), pair!.slice(i + 1).trim());
    }
    return res;
  }

  /**
   * Loads url and follows redirects while they stay on the server; returns
   * the last answer's page, or the Location that leaves the server (the
   * client's redirect URI).
   */
  async load(url: string, init: RequestInit = {}): Promise<{ html?: string; leftTo?: string; status: number }> {
    let res = await this.#fetch(url, init);
    for (let i = 0; i < 10 && res.status >= 300 && res.status < 400; i++) {
      const loc = new URL(res.headers.get("location")!, this.origin);
      if (loc.origin !== this.origin) return { leftTo: loc.toString(), status: res.status };
      res = await this.#fetch(loc.toString());
    }
    return { html: await res.text(), status: res.status };
  }

  async submit(html: string, action: string, change: (fields: Array<[string, string]>) => Array<[string, string]> = (f) => f) {
    const form = findForm(html, action);
    const body = new URLSearchParams(change(form.fields));
    return this.load(form.action, {
      method: "POST",
      body: body.toString(),
      headers: { "Content-Type": "application/x-www-form-urlencoded", Origin: this.origin, "Sec-Fetch-Site": "same-origin" },
    });
  }

  /**
   * Opens an authorization URL, signs in, and answers the consent page
   * (allow, or deny); returns the redirect back to the client.
   */
  async authorize(authURL: string, email: string, password: string, answer: "allow" | "deny" = "allow"): Promise<string> {
    let page = await this.load(authURL);
    if (page.html && /action="\/login"/.test(page.html)) {
      page = await this.submit(page.html, "/login", (f) => [...f.filter(([k]) => k !== "email" && k !== "password"), ["email", email], ["password", password]]);
    }
    if (page.leftTo) return page.leftTo;
    if (!page.html) throw new Error(`no consent page (status ${page.status})`);
    const done = await this.submit(page.html, "/oauth/authorize", (f) => [...f, ["action", answer]]);
    if (!done.leftTo) throw new Error(`consent did not redirect to the client (status ${done.status}):\n${done.html?.slice(0, 2000)}`);
    return done.leftTo;
  }
}
