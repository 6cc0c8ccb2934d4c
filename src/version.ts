/** vigil's version, as published in probe parameters and the CLI's --version. */
export const VIGIL_VERSION = "0.1.0";
