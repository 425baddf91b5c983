/** What the next reload must do; requests made while one is pending fold into it. */
export interface ReloadRequest {
  /** Every app, not only those changed since the watermark: after each LISTEN put in place. */
  readonly complete: boolean
  /** A notification or a new LISTEN asked: a standby is waited for first. */
  readonly announced: boolean
}

/** One request that does what both ask. */
export function foldRequests(
  pending: ReloadRequest | undefined,
  request: Partial<ReloadRequest>,
): ReloadRequest {
  return {
    complete: pending?.complete === true || request.complete === true,
    announced: pending?.announced === true || request.announced === true,
  }
}
