/** The OpenAI error body: `{"error": {"message", "type", "param", "code"}}`. */
export interface ErrorBody {
  error: { message: string; type: string; param: string | null; code: string | null };
}

/** An error that the HTTP layer answers with its status and an OpenAI-style body. */
export class ApiError extends Error {
  override name = 'ApiError';

  constructor(
    readonly status: number,
    message: string,
    readonly type: string,
    readonly param: string | null = null,
    readonly code: string | null = null,
  ) {
    super(message);
  }

  toBody(): ErrorBody {
    return {
      error: { message: this.message, type: this.type, param: this.param, code: this.code },
    };
  }
}

export function badRequest(message: string, param: string | null = null, code?: string): ApiError {
  return new ApiError(400, message, 'invalid_request_error', param, code ?? null);
}

export function unauthorized(): ApiError {
  return new ApiError(
    401,
    'Incorrect or missing API key. Send it as "Authorization: Bearer <key>".',
    'invalid_request_error',
    null,
    'invalid_api_key',
  );
}

export function modelNotFound(model: string): ApiError {
  return new ApiError(
    404,
    `The model \`${model}\` does not exist.`,
    'invalid_request_error',
    'model',
    'model_not_found',
  );
}

export function routeNotFound(method: string, url: string): ApiError {
  return new ApiError(404, `No route for ${method} ${url}.`, 'invalid_request_error');
}

export function tooManyRequests(limit: number): ApiError {
  return new ApiError(
    429,
    `The server is at its limit of ${limit} concurrent requests; retry later.`,
    'rate_limit_error',
    null,
    'rate_limit_exceeded',
  );
}

export function bodyTooLarge(limitBytes: number): ApiError {
  return new ApiError(
    413,
    `The request body is larger than the limit of ${limitBytes} bytes.`,
    'invalid_request_error',
    null,
    'request_too_large',
  );
}

export function serverError(message: string): ApiError {
  return new ApiError(500, message, 'server_error');
}

/** Fastify's own errors carry `statusCode` and `code` (FST_ERR_*). */
interface FrameworkError {
  statusCode?: number;
  code?: string;
  message?: string;
}

/**
 * Maps anything thrown inside a route (ours, Fastify's parser errors, bugs) to an ApiError,
 * so every answer has the OpenAI shape and a bug is a 500, never a crash.
 */
export function toApiError(e: unknown, bodyLimit: number): ApiError {
  if (e instanceof ApiError) return e;
  const fe = (typeof e === 'object' && e !== null ? e : {}) as FrameworkError;
  const status = fe.statusCode ?? 500;
  if (fe.code === 'FST_ERR_CTP_BODY_TOO_LARGE' || status === 413) return bodyTooLarge(bodyLimit);
  if (fe.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE' || status === 415)
    return new ApiError(
      415,
      'The request body must be JSON: send "Content-Type: application/json".',
      'invalid_request_error',
      null,
      'unsupported_media_type',
    );
  if (fe.code === 'FST_ERR_BAD_URL')
    return new ApiError(400, 'The request URL is malformed.', 'invalid_request_error');
  if (status >= 400 && status < 500)
    return new ApiError(status, fe.message ?? 'Bad request', 'invalid_request_error');
  return serverError(`Internal server error: ${fe.message ?? String(e)}`);
}

/** Node's HTTP parser errors (before any route runs) → status, as node:http would answer them. */
function clientErrorStatus(code: string | undefined): number {
  if (code === 'HPE_HEADER_OVERFLOW') return 431;
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT') return 408;
  return 400;
}

const CLIENT_ERROR_TEXT: Record<number, string> = {
  400: 'The HTTP request is malformed.',
  408: 'The request was not received in time.',
  431: 'The request headers are too large.',
};

/**
 * fastify's `clientErrorHandler`: answers a request the HTTP parser refused (bad request line,
 * headers too large, too slow) with the OpenAI error shape, then closes the connection.
 */
export function clientErrorHandler(
  err: Error & { code?: string },
  socket: import('node:net').Socket,
): void {
  if (err.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy();
    return;
  }
  const status = clientErrorStatus(err.code);
  const body = JSON.stringify(
    new ApiError(status, CLIENT_ERROR_TEXT[status]!, 'invalid_request_error').toBody(),
  );
  const reason = {
    400: 'Bad Request',
    408: 'Request Timeout',
    431: 'Request Header Fields Too Large',
  }[status];
  socket.end(
    `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}
