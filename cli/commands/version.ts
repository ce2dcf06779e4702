import * as Flags from "@oclif/core/flags";
import { ConnectedCommand } from "../base.js";
import { clientVersion, serverVersion, type VersionResult } from "../version/results.js";
import { versionText } from "../version/text.js";

export default class Version extends ConnectedCommand<typeof Version> {
  static override summary = "Print qimctl's version and the version of the server it connects to.";
  static override description = `The client: qimctl's package version, the Node.js version and the platform (what \`qimctl --version\` prints in one line). The server (ObserveService.GetServerInfo, any role, not audited): the version it runs, its Node.js version, its node id in the engine cluster and when it started, at the endpoint of the usual connection settings (flags, QIMCTL_*, the context).

With --client it connects to nothing. Without it, a server that cannot be reached still prints the client part (JSON: "server": null) and fails as any command that cannot connect, saying why.

Exit codes: 0 ok (always with --client); 2 no endpoint or bad connection settings (--insecure against a TLS server among them); 5 the server could not be reached or did not answer; 6 the server refused the certificate.`;
  static override examples = [
    "<%= config.bin %> <%= command.id %>",
    { description: "The client alone, no connection", command: "<%= config.bin %> <%= command.id %> --client" },
    { description: "The server's version in a script", command: "<%= config.bin %> <%= command.id %> --output json | jq -r .server.version" },
  ];
  static override flags = {
    client: Flags.boolean({ description: "the client's version only; connect to nothing" }),
  };

  async run(): Promise<VersionResult> {
    const client = clientVersion(this.config.version);
    if (this.flags.client) {
      const result = { client, server: null };
      this.log(versionText(result));
      return result;
    }
    try {
      const { client: api, endpoint } = await this.connect();
      const result = { client, server: serverVersion({ ...(await api.getServerInfo({})), endpoint }) };
      this.log(versionText(result));
      return result;
    } catch (err) {
      // the client part is known whatever happened to the connection: print it, then fail as usual
      const failure = await this.failureOf(err);
      const result = { client, server: null };
      this.log(versionText(result, `${failure.code} (the error follows on stderr)`));
      return this.failWithResult(result, failure);
    }
  }
}
