#!/usr/bin/env bash
# Fetches the jars of Apache Cassandra (cassandra-all and its runtime dependencies) from the
# Maven repository into a local cache, for the tests' single-node Cassandra
# (test/harness/cassandra.ts starts it from there).
#
#   scripts/cassandra-fetch.sh
#
# Cache: ${QIM_CASSANDRA_HOME:-$HOME/.cache/qim-cassandra}/<version>/lib (Maven's own downloads go
# to .../m2 beside it). Idempotent: exits at once when the lib/ is already complete. The jars are
# copied into a temp dir that is renamed to lib/ only once complete, so an interrupted fetch
# never leaves a half lib/. Concurrent runs are serialised with flock.
#
# stdout: exactly one line, the lib/ directory (the harness reads it); progress goes to stderr.
# Needs Java 17 ($QIM_JAVA if set, else `java` on PATH: Cassandra 5.0 runs on 11/17 only, not
# 24+) and Maven (`mvn`).
set -euo pipefail

# The one place the Cassandra version is pinned (the harness takes the lib/ path printed below).
CASSANDRA_VERSION=5.0.9
# Pinned: the default maven-dependency-plugin of old Maven installs is 2.x.
DEPENDENCY_PLUGIN_VERSION=3.6.1

home="${QIM_CASSANDRA_HOME:-$HOME/.cache/qim-cassandra}"
dest="$home/$CASSANDRA_VERSION"
lib="$dest/lib"
marker="$lib/.complete"

say() { echo "cassandra-fetch: $*" >&2; }
die() { say "$*"; exit 1; }

if [ -f "$marker" ]; then
  echo "$lib"
  exit 0
fi

# --- prerequisites ---------------------------------------------------------------------------
java_bin="${QIM_JAVA:-java}"
if ! command -v "$java_bin" >/dev/null 2>&1; then
  die "java not found ($java_bin): Cassandra $CASSANDRA_VERSION needs Java 17 (Debian: apt-get install openjdk-17-jre-headless; point QIM_JAVA at its java if another one is the default)"
fi
java_version_line="$("$java_bin" -version 2>&1 | head -n 1)"
java_major="$(printf '%s\n' "$java_version_line" | sed -n 's/.*version "\([0-9][0-9]*\).*/\1/p')"
if [ "$java_major" != "17" ]; then
  die "$java_bin is not Java 17 ($java_version_line): Cassandra $CASSANDRA_VERSION needs Java 17 (Debian: apt-get install openjdk-17-jre-headless; set QIM_JAVA=/usr/lib/jvm/java-17-openjdk-amd64/bin/java)"
fi
if ! command -v mvn >/dev/null 2>&1; then
  die "mvn not found: fetching the Cassandra jars needs Maven (Debian: apt-get install maven)"
fi

# Maven runs on JAVA_HOME (else `java` on PATH): with QIM_JAVA, on that Java 17.
if [ -n "${QIM_JAVA:-}" ] && [ -z "${JAVA_HOME:-}" ]; then
  JAVA_HOME="$(dirname "$(dirname "$(readlink -f "$(command -v "$QIM_JAVA")")")")"
  export JAVA_HOME
fi

mkdir -p "$dest"

# --- serialise concurrent fetches ------------------------------------------------------------
if command -v flock >/dev/null 2>&1; then
  exec 9>"$dest/.fetch.lock"
  flock 9
  if [ -f "$marker" ]; then
    echo "$lib"
    exit 0
  fi
fi

tmp="$(mktemp -d "$dest/.fetch.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT

cat >"$tmp/pom.xml" <<EOF
<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0"
         xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
         xsi:schemaLocation="http://maven.apache.org/POM/4.0.0 http://maven.apache.org/xsd/maven-4.0.0.xsd">
  <modelVersion>4.0.0</modelVersion>
  <groupId>local.qim</groupId>
  <artifactId>qim-cassandra-fetch</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency>
      <groupId>org.apache.cassandra</groupId>
      <artifactId>cassandra-all</artifactId>
      <version>$CASSANDRA_VERSION</version>
    </dependency>
  </dependencies>
</project>
EOF

say "fetching cassandra-all $CASSANDRA_VERSION and its dependencies (about 70 MB) into $lib"
start=$SECONDS
# Maven's output goes to a log, shown only if it fails.
if ! mvn -q -B -Dstyle.color=never -f "$tmp/pom.xml" \
  -Dmaven.repo.local="$home/m2" \
  "org.apache.maven.plugins:maven-dependency-plugin:$DEPENDENCY_PLUGIN_VERSION:copy-dependencies" \
  -DincludeScope=runtime \
  -DoutputDirectory="$tmp/lib" >"$tmp/mvn.log" 2>&1; then
  sed 's/\x1b\[[0-9;]*m//g' "$tmp/mvn.log" | tail -n 40 >&2
  die "mvn could not fetch cassandra-all $CASSANDRA_VERSION (its output above)"
fi
[ -f "$tmp/lib/cassandra-all-$CASSANDRA_VERSION.jar" ] || die "mvn finished but $tmp/lib has no cassandra-all-$CASSANDRA_VERSION.jar"

touch "$tmp/lib/.complete"
rm -rf "$lib"
mv "$tmp/lib" "$lib"
say "$(find "$lib" -name '*.jar' | wc -l) jars, $(du -sh "$lib" | cut -f1) in $((SECONDS - start)) s"
echo "$lib"
