/** The default ports, read by the services and by the container's healthcheck. */

/** The review server's port in remote (container) mode. */
export const REVIEW_REMOTE_PORT = 19432;

export const PROXY_PORT = 8045;
