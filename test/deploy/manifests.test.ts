import { readdirSync, readFileSync } from 'node:fs'
import t from 'tap'
import { parseAllDocuments } from 'yaml'
import { loadConfig } from '../../src/config/config.js'
import { CONFIG_VARIABLES } from '../../src/config/variables.js'
import { SERVICE_PORT } from './service-port.js'

/**
 * deploy/kubernetes/ checked against the service: probe paths, the ports (the
 * API's and ADMIN_PORT's), the configuration variables the service reads, and
 * the settings that keep the service available and locked down. No cluster
 * needed: the YAML is parsed.
 */

const KUBERNETES_DIR = new URL('../../deploy/kubernetes/', import.meta.url)

/** Hold passwords: only ever from a Secret. */
const SECRET_VARIABLES = new Set(['DATABASE_URL', 'FEED_DATABASE_URL'])

type Labels = Record<string, string>
interface Selector {
  matchLabels?: Labels
}
interface Probe {
  httpGet?: { path?: string; port?: string | number }
}
interface EnvVar {
  name: string
  value?: string
  valueFrom?: { secretKeyRef?: { name: string; key: string }; configMapKeyRef?: unknown }
}
interface Container {
  name: string
  image: string
  ports?: { name?: string; containerPort: number }[]
  env?: EnvVar[]
  envFrom?: { configMapRef?: { name: string }; secretRef?: { name: string } }[]
  readinessProbe?: Probe
  livenessProbe?: Probe
  startupProbe?: Probe
  lifecycle?: { preStop?: { exec?: { command?: string[] }; sleep?: { seconds: number } } }
  resources?: { requests?: Labels; limits?: Labels }
  securityContext?: SecurityContext
}
interface SecurityContext {
  runAsNonRoot?: boolean
  runAsUser?: number
  readOnlyRootFilesystem?: boolean
  allowPrivilegeEscalation?: boolean
  capabilities?: { drop?: string[] }
  seccompProfile?: { type?: string }
}
interface PodSpec {
  containers: Container[]
  securityContext?: SecurityContext
  terminationGracePeriodSeconds?: number
}
interface NetworkPolicyPort {
  port?: string | number
}
interface NetworkPolicyPeer {
  podSelector?: Selector
  namespaceSelector?: Selector
}
interface NetworkPolicyRule {
  from?: NetworkPolicyPeer[]
  ports?: NetworkPolicyPort[]
}
// Every kind in one loose shape: the tests below read the fields they check.
interface Manifest {
  apiVersion: string
  kind: string
  metadata: { name: string; labels?: Labels }
  spec?: Record<string, unknown> & {
    replicas?: number
    selector?: Selector & Labels
    template?: { metadata: { labels: Labels; annotations?: Labels }; spec: PodSpec }
    ports?: { name?: string; port: number; targetPort: string | number }[]
    type?: string
    minReplicas?: number
    maxReplicas?: number
    scaleTargetRef?: { kind: string; name: string }
    minAvailable?: number | string
    podSelector?: Selector
    policyTypes?: string[]
    ingress?: NetworkPolicyRule[]
  }
  data?: Labels
  resources?: string[]
}

function readManifestFile(name: string): Manifest[] {
  const text = readFileSync(new URL(name, KUBERNETES_DIR), 'utf8')
  return parseAllDocuments(text).map((document) => {
    if (document.errors.length > 0) throw new Error(`${name}: ${document.errors[0]?.message}`)
    return document.toJS() as Manifest
  })
}

const manifestFiles = readdirSync(KUBERNETES_DIR)
  .filter((name) => /\.ya?ml$/.test(name))
  .sort()
const kustomizationFile = 'kustomization.yaml'
const resourceFiles = manifestFiles.filter((name) => name !== kustomizationFile)
const manifests = resourceFiles.flatMap(readManifestFile)

function findOne(kind: string): Manifest {
  const found = manifests.filter((manifest) => manifest.kind === kind)
  if (found.length !== 1) throw new Error(`expected one ${kind}, found ${found.length}`)
  return found[0] as Manifest
}

function matches(selector: Selector | undefined, labels: Labels): boolean {
  const wanted = Object.entries(selector?.matchLabels ?? {})
  return wanted.length > 0 && wanted.every(([key, value]) => labels[key] === value)
}

const deployment = findOne('Deployment')
const podTemplate = deployment.spec?.template
if (podTemplate === undefined) throw new Error('the Deployment has no pod template')
const podLabels = podTemplate.metadata.labels
const podSpec = podTemplate.spec
const container = podSpec.containers[0] as Container
const configMap = findOne('ConfigMap')
/** The ConfigMap plus a DATABASE_URL: the configuration the pods start with. */
const podConfig = loadConfig({
  ...configMap.data,
  DATABASE_URL: 'postgres://shell:x@db:5432/shell',
})
const ADMIN_PORT = podConfig.adminPort
if (ADMIN_PORT === null) throw new Error('the ConfigMap sets no ADMIN_PORT')

/** Resolves a probe's, Service's or NetworkPolicy's port (a number or a container port name). */
function resolvePort(port: string | number | undefined): number | undefined {
  if (typeof port === 'number') return port
  return container.ports?.find((candidate) => candidate.name === port)?.containerPort
}

t.test('the kustomization lists every manifest in the folder, and only those', async (t) => {
  const [kustomization] = readManifestFile(kustomizationFile)
  t.same([...(kustomization?.resources ?? [])].sort(), resourceFiles)
  t.ok(manifests.length >= 7, 'Deployment, Service, ConfigMap, NetworkPolicy, PDB, HPA and more')
  for (const manifest of manifests) {
    t.equal(
      manifest.metadata.labels?.['app.kubernetes.io/name'],
      'shell-data',
      `${manifest.kind} carries the common name label`,
    )
  }
})

t.test('the Deployment runs two or more replicas of one container on port 8080', async (t) => {
  t.ok((deployment.spec?.replicas ?? 1) >= 2, 'two replicas or more')
  t.ok(matches(deployment.spec?.selector, podLabels), 'its selector matches its pod labels')
  t.equal(podSpec.containers.length, 1)
  t.same(container.ports, [
    { name: 'http', containerPort: SERVICE_PORT, protocol: 'TCP' },
    { name: 'admin', containerPort: ADMIN_PORT, protocol: 'TCP' },
  ])
  t.notMatch(container.image, /:latest$/)
  t.ok(container.resources?.requests?.cpu && container.resources.requests.memory, 'requests')
  t.ok(container.resources?.limits?.memory, 'a memory limit')
})

t.test("probes use the service's probe paths on the admin port", async (t) => {
  t.equal(container.readinessProbe?.httpGet?.path, '/readyz')
  t.equal(container.livenessProbe?.httpGet?.path, '/healthz')
  const probes = [container.readinessProbe, container.livenessProbe, container.startupProbe]
  for (const probe of probes.filter((probe) => probe !== undefined)) {
    t.match(probe.httpGet?.path, /^\/(healthz|readyz)$/)
    // Its own listening socket: no load on PORT holds a probe's connection up.
    t.equal(resolvePort(probe.httpGet?.port), ADMIN_PORT)
  }
  t.not(ADMIN_PORT, SERVICE_PORT)
  const annotations = podTemplate.metadata.annotations ?? {}
  t.equal(annotations['prometheus.io/port'], String(ADMIN_PORT), 'scraped by annotation there too')
})

t.test('every variable is one the service reads and passes its own checks', async (t) => {
  const refs = container.envFrom ?? []
  t.same(
    refs.map((ref) => ref.configMapRef?.name),
    [configMap.metadata.name],
    'the environment comes from this ConfigMap (and the env list), nothing else',
  )
  const configMapData = configMap.data ?? {}
  const names = [...Object.keys(configMapData), ...(container.env ?? []).map((env) => env.name)]
  for (const name of names) {
    t.ok(
      (CONFIG_VARIABLES as readonly string[]).includes(name),
      `${name} is a variable the service reads`,
    )
  }
  t.equal(new Set(names).size, names.length, 'no variable is set twice')
  for (const value of Object.values(configMapData)) t.type(value, 'string')
  // The ConfigMap plus a DATABASE_URL is a configuration the service accepts, on the container port.
  t.equal(podConfig.port, SERVICE_PORT)
  t.not(podConfig.oidc, null, 'a real issuer: local mode refuses to listen beyond loopback')
})

t.test('database URLs come from a Secret, never from plain values', async (t) => {
  t.notOk(Object.keys(configMap.data ?? {}).some((name) => SECRET_VARIABLES.has(name)))
  const databaseUrl = container.env?.find((env) => env.name === 'DATABASE_URL')
  t.ok(databaseUrl?.valueFrom?.secretKeyRef?.name, 'DATABASE_URL from a secretKeyRef')
  for (const env of container.env ?? []) {
    if (SECRET_VARIABLES.has(env.name)) {
      t.equal(env.value, undefined, `${env.name} has no literal value`)
      t.ok(env.valueFrom?.secretKeyRef, `${env.name} from a Secret`)
    }
  }
})

t.test('the pod runs as non-root on a read-only root filesystem', async (t) => {
  const pod = podSpec.securityContext ?? {}
  const own = container.securityContext ?? {}
  t.equal(own.runAsNonRoot ?? pod.runAsNonRoot, true)
  t.not(own.runAsUser ?? pod.runAsUser ?? 0, 0)
  t.equal(own.readOnlyRootFilesystem, true)
  t.equal(own.allowPrivilegeEscalation, false)
  t.same(own.capabilities?.drop, ['ALL'])
  t.equal(own.seccompProfile?.type ?? pod.seccompProfile?.type, 'RuntimeDefault')
})

t.test(
  'termination grace covers the shutdown delay and the drain, with no pause before',
  async (t) => {
    const preStop = container.lifecycle?.preStop
    const command = preStop?.exec?.command ?? []
    t.equal(preStop?.sleep, undefined, 'no preStop sleep action')
    t.notOk(
      command.some((word) => /\bsleep\b/.test(word)),
      'no preStop sleep command: SHUTDOWN_DELAY_S is the pause, and both would add up',
    )
    const { shutdownDelayS } = loadConfig({
      ...configMap.data,
      DATABASE_URL: 'postgres://shell:x@db:5432/shell',
    })
    t.ok(shutdownDelayS > 0, `a delay (${shutdownDelayS} s) while the endpoints drop the pod`)
    const graceS = podSpec.terminationGracePeriodSeconds ?? 30
    // The contract: exit within SHUTDOWN_DELAY_S plus 10 s.
    t.ok(
      graceS >= shutdownDelayS + 10,
      `grace ${graceS} s covers the ${shutdownDelayS} s delay and the 10 s drain`,
    )
  },
)

t.test('the Service is a ClusterIP in front of the container port', async (t) => {
  const service = findOne('Service')
  t.equal(service.spec?.type ?? 'ClusterIP', 'ClusterIP')
  t.ok(matches({ matchLabels: service.spec?.selector }, podLabels), 'selects the pods')
  const [port, admin] = service.spec?.ports ?? []
  t.equal(resolvePort(port?.targetPort), SERVICE_PORT)
  // The ServiceMonitor names its port on the Service (monitoring-rules.test.ts).
  t.equal(admin?.name, 'admin')
  t.equal(resolvePort(admin?.targetPort), ADMIN_PORT, 'and the admin port, for the scrapes')
})

t.test('the autoscaler keeps two replicas or more of this Deployment', async (t) => {
  const autoscaler = findOne('HorizontalPodAutoscaler')
  t.equal(autoscaler.apiVersion, 'autoscaling/v2')
  t.same(autoscaler.spec?.scaleTargetRef, {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    name: deployment.metadata.name,
  })
  t.ok((autoscaler.spec?.minReplicas ?? 1) >= 2, 'minReplicas two or more')
  t.ok((autoscaler.spec?.maxReplicas ?? 0) >= (autoscaler.spec?.minReplicas ?? 1), 'max >= min')
})

t.test('the disruption budget covers the pods and still lets a node drain', async (t) => {
  const budget = findOne('PodDisruptionBudget')
  t.ok(matches(budget.spec?.selector, podLabels))
  t.equal(budget.spec?.minAvailable, 1, 'one replica may go at a time when two run')
})

/** A peer that is exactly one namespace, by its name: Prometheus' namespace. */
function namesOneNamespace(peer: NetworkPolicyPeer): boolean {
  const labels = Object.keys(peer.namespaceSelector?.matchLabels ?? {})
  return peer.podSelector === undefined && labels.join() === 'kubernetes.io/metadata.name'
}

t.test('the network policy admits only selected peers, each on its port', async (t) => {
  const policy = findOne('NetworkPolicy')
  t.ok(matches(policy.spec?.podSelector, podLabels), 'applies to the pods')
  t.ok(policy.spec?.policyTypes?.includes('Ingress'), 'restricts ingress')
  const rules = policy.spec?.ingress ?? []
  t.ok(rules.length > 0, 'has ingress rules')
  const portsOf = (rule: NetworkPolicyRule) =>
    (rule.ports ?? []).map((port) => resolvePort(port.port))
  for (const rule of rules) {
    t.ok((rule.from ?? []).length > 0, 'no rule admits every peer')
    for (const peer of rule.from ?? []) {
      t.ok(peer.podSelector?.matchLabels || peer.namespaceSelector?.matchLabels, 'peer by label')
    }
    t.ok([`${SERVICE_PORT}`, `${ADMIN_PORT}`].includes(portsOf(rule).join()), 'one port a rule')
  }
  const clients = rules.filter((rule) => portsOf(rule).join() === `${SERVICE_PORT}`)
  t.ok(clients.length > 0, 'the clients are admitted to the service port')
  // /metrics is on the admin port only: a client that may call the API may not scrape it.
  const scrapers = rules.filter((rule) => portsOf(rule).includes(ADMIN_PORT))
  t.equal(scrapers.length, 1, 'one rule admits to the admin port')
  t.ok(
    scrapers.every((rule) => (rule.from ?? []).every(namesOneNamespace)),
    "only Prometheus' namespace, by name",
  )
})
