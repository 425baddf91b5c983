/** The port the image listens on, the container port, and the probes' target (README, PORT). */
export const SERVICE_PORT = 8080
