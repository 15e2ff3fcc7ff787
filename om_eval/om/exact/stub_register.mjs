// om-eval: registers stub_hooks.mjs (loaded with `node --import`), so the package loads without its dependencies.
import { register } from "node:module";

register("./stub_hooks.mjs", import.meta.url);
