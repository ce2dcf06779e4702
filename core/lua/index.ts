/** The Lua module: loading lua/ and the typed declaration of each script. */
export { callScript, defineScripts, inlineIncludes, loadScripts, loadScriptsFrom, pipelineScript, SCRIPT_VERSION, type LoadedScript, type ScriptTarget } from "./loader.js";
export { declaredScripts, defineScript, defineVariadicScript, LUA_STATUS, luaStatus, statusName, type Arg, type LuaStatusName, type Script, type VariadicScript } from "./script.js";
