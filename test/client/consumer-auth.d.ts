/** A front end's own sign-in code, as the React example of docs/client.md (consumer-react.tsx) uses it. */
declare const auth: {
  /** The access token it holds now. */
  readonly token: string
  /** Asks the identity provider for a fresh one. */
  renewToken(): Promise<string>
}
