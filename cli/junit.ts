/**
 * JUnit XML for CI systems (`drill rebuild --junit`, `dispatch audit --junit`): the de facto format
 * of Ant's JUnit task that Jenkins, GitLab, GitHub Actions reporters and the like read — a
 * <testsuites> root holding one <testsuite> with <properties>, then one <testcase> per thing
 * checked, with one <failure> per problem found in it. `failures` counts the test cases that
 * failed (as the Ant task counts them), not the <failure> elements.
 *
 * A dozen lines of escaping instead of an XML library: the documents are flat and written only
 * here. Text and attribute values are escaped for XML 1.0, where some characters (most C0
 * controls, lone surrogates, U+FFFE/U+FFFF) cannot appear at all, not even as character
 * references: they are written as visible `\u{…}` text so that a value the server reported is
 * never dropped silently and the file always parses.
 */
export interface JUnitFailure {
  /** What kind of failure (a drill's field, a partition's verdict). */
  type: string;
  /** One line: what differs, expected vs actual. */
  message: string;
  /** The details, as many lines as needed. */
  text: string;
}

export interface JUnitCase {
  /** Groups test cases in a report (Jenkins reads dots as package separators). */
  classname: string;
  name: string;
  failures: JUnitFailure[];
  /** Shown with the test case whether it passed or not. */
  systemOut?: string;
}

export interface JUnitSuite {
  name: string;
  /** RFC 3339; written as the xs:dateTime without zone the JUnit schema asks for (UTC). */
  timestamp: string;
  /** Seconds. */
  time: number;
  properties: readonly (readonly [string, string | number | boolean])[];
  cases: readonly JUnitCase[];
}

// XML 1.0 Char: #x9 | #xA | #xD | [#x20-#xD7FF] | [#xE000-#xFFFD] | [#x10000-#x10FFFF]
const NOT_XML_CHAR = /[^\t\n\r\u0020-\ud7ff\ue000-\ufffd\u{10000}-\u{10ffff}]/gu;

function visible(s: string): string {
  return s.replace(NOT_XML_CHAR, (c) => `\\u{${c.codePointAt(0)!.toString(16)}}`);
}

/** Character data between tags; a CR as a character reference (a parser turns a literal CR LF into LF). */
export function xmlText(s: string): string {
  return visible(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/\r/g, "&#13;");
}

/** An attribute value in double quotes; newlines and tabs as character references (a parser would fold them into spaces). */
export function xmlAttr(s: string | number | boolean): string {
  return visible(String(s))
    .replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;")
    .replace(/\t/g, "&#9;").replace(/\n/g, "&#10;").replace(/\r/g, "&#13;");
}

const attrs = (a: Record<string, string | number | boolean>) => Object.entries(a).map(([k, v]) => ` ${k}="${xmlAttr(v)}"`).join("");

/** The JUnit schema's timestamp: YYYY-MM-DDTHH:MM:SS, no zone (here UTC). */
function junitTimestamp(rfc3339: string): string {
  const ms = Date.parse(rfc3339);
  return Number.isNaN(ms) ? "" : new Date(ms).toISOString().slice(0, 19);
}

/** The document: one suite, its properties, one test case each, one failure per problem. */
export function junitXml(suite: JUnitSuite): string {
  const failed = suite.cases.filter((c) => c.failures.length > 0).length;
  const counts = { tests: suite.cases.length, failures: failed, errors: 0, skipped: 0, time: suite.time.toFixed(3) };
  const lines = [
    `<?xml version="1.0" encoding="UTF-8"?>`,
    `<testsuites${attrs({ name: suite.name, ...counts })}>`,
    `  <testsuite${attrs({ name: suite.name, ...counts, timestamp: junitTimestamp(suite.timestamp) })}>`,
    `    <properties>`,
    ...suite.properties.map(([name, value]) => `      <property${attrs({ name, value })}/>`),
    `    </properties>`,
  ];
  for (const c of suite.cases) {
    const head = `    <testcase${attrs({ classname: c.classname, name: c.name })}`;
    if (c.failures.length === 0 && c.systemOut === undefined) {
      lines.push(`${head}/>`);
      continue;
    }
    lines.push(`${head}>`);
    for (const f of c.failures) lines.push(`      <failure${attrs({ type: f.type, message: f.message })}>${xmlText(f.text)}</failure>`);
    if (c.systemOut !== undefined) lines.push(`      <system-out>${xmlText(c.systemOut)}</system-out>`);
    lines.push(`    </testcase>`);
  }
  lines.push(`  </testsuite>`, `</testsuites>`, "");
  return lines.join("\n");
}
