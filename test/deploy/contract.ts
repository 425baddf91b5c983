/** What the packaging tests hold the deploy files to. */

/** The port the image listens on, the container port, and the probes' target. */
export const CONTRACT_PORT = 8080
