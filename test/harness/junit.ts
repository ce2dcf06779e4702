/**
 * Reads a JUnit XML file with an independent parser — Python's xml.etree.ElementTree, not the code
 * that wrote it — and returns what a CI system would see: the suites, their counts and
 * properties, each test case with its failures. A file that is not well-formed XML fails here.
 */
import { execFileSync } from "node:child_process";

export interface ParsedJUnit {
  root: string;
  /** The root's own tests/failures attributes (a <testsuites> root repeats the totals). */
  rootTests: number;
  rootFailures: number;
  suites: {
    name: string;
    tests: number;
    failures: number;
    errors: number;
    skipped: number;
    timestamp: string;
    properties: Record<string, string>;
    cases: { classname: string; name: string; failures: { type: string; message: string; text: string }[]; systemOut: string | null }[];
  }[];
}

const SCRIPT = `
import json, sys
import xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
def n(e, k):
    return int(e.get(k, "0"))
print(json.dumps({
    "root": root.tag,
    "rootTests": n(root, "tests"),
    "rootFailures": n(root, "failures"),
    "suites": [{
        "name": s.get("name"), "tests": n(s, "tests"), "failures": n(s, "failures"), "errors": n(s, "errors"),
        "skipped": n(s, "skipped"), "timestamp": s.get("timestamp", ""),
        "properties": {p.get("name"): p.get("value") for p in s.findall("properties/property")},
        "cases": [{
            "classname": c.get("classname"), "name": c.get("name"),
            "failures": [{"type": f.get("type"), "message": f.get("message"), "text": f.text or ""} for f in c.findall("failure")],
            "systemOut": c.findtext("system-out"),
        } for c in s.findall("testcase")],
    } for s in suites],
}))
`;

export function parseJUnit(file: string): ParsedJUnit {
  return JSON.parse(execFileSync("python3", ["-c", SCRIPT, file], { encoding: "utf8" })) as ParsedJUnit;
}
