/** The version of this SDK, sent as User-Agent "ams-typescript/<VERSION>" (outside browsers). */
export const VERSION = "0.1.0";
