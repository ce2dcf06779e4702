/** Domain errors with stable codes and ERROR_CODES, their one declaration (no imports: the CLI's exit codes load it on every command). */
export * from "./errors.js";
