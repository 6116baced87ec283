/**
 * The dev SAPI's objects as SAPI keeps them (sdc-sapi lib/server/model.js): applications,
 * services (type `vm` or `agent`) and instances, which take their service's type. Kept in
 * insertion order, which is the order moray lists them in. The wire forms (`serialize*`)
 * depend on the client's Accept-Version the way sdc-sapi's endpoints make them: `type` only
 * for 2.0.0 and later.
 */

export interface SapiApplication {
  uuid: string;
  name: string;
  owner_uuid: string;
  params?: Record<string, unknown>;
  metadata?: Record<string, unknown>;
  metadata_schema?: Record<string, unknown>;
  manifests?: Record<string, unknown>;
  master?: boolean;
}

export type ServiceType = 'vm' | 'agent';

export interface SapiServiceObject {
  uuid: string;
  name: string;
  application_uuid: string;
  params?: Record<string, unknown>;
  metadata?: Record<string, unknown>;
  manifests?: Record<string, unknown>;
  master?: boolean;
  type: ServiceType;
}

export interface SapiInstance {
  uuid: string;
  service_uuid: string;
  params?: Record<string, unknown>;
  metadata?: Record<string, unknown>;
  manifests?: Record<string, unknown>;
  master?: boolean;
  type: ServiceType;
}

/** A configuration manifest (sdc-sapi lib/server/endpoints/manifests.js). */
export interface SapiManifest {
  uuid: string;
  name: string;
  path: string;
  template: string;
  post_cmd?: string;
  post_cmd_linux?: string;
  version?: string;
  master?: boolean;
}

export interface SapiDoc {
  version: 1;
  applications: SapiApplication[];
  services: SapiServiceObject[];
  instances: SapiInstance[];
  /** Absent in documents written before manifests were kept. */
  manifests?: SapiManifest[];
}

export class SapiState {
  readonly applications = new Map<string, SapiApplication>();
  readonly services = new Map<string, SapiServiceObject>();
  readonly instances = new Map<string, SapiInstance>();
  readonly manifests = new Map<string, SapiManifest>();

  snapshot(): SapiDoc {
    return {
      version: 1,
      applications: [...this.applications.values()],
      services: [...this.services.values()],
      instances: [...this.instances.values()],
      manifests: [...this.manifests.values()],
    };
  }

  restore(doc: unknown): void {
    const d = doc as Partial<SapiDoc> | undefined;
    if (d?.version !== 1 || !Array.isArray(d.applications) || !Array.isArray(d.services) || !Array.isArray(d.instances)) {
      throw new Error('the stored SAPI state is not a version 1 document');
    }
    for (const a of d.applications) this.applications.set(a.uuid, a);
    for (const s of d.services) this.services.set(s.uuid, s);
    for (const i of d.instances) this.instances.set(i.uuid, i);
    for (const m of Array.isArray(d.manifests) ? d.manifests : []) this.manifests.set(m.uuid, m);
  }
}

/** sdc-sapi lib/server/endpoints/services.js serialize. */
export function serializeService(svc: SapiServiceObject, v2: boolean): Record<string, unknown> {
  const out: Record<string, unknown> = {
    uuid: svc.uuid,
    name: svc.name,
    application_uuid: svc.application_uuid,
    params: svc.params,
    metadata: svc.metadata,
    manifests: svc.manifests,
    master: svc.master,
  };
  if (v2) out.type = svc.type;
  return out;
}

/** sdc-sapi lib/server/endpoints/instances.js serialize. */
export function serializeInstance(inst: SapiInstance, v2: boolean): Record<string, unknown> {
  const out: Record<string, unknown> = {
    uuid: inst.uuid,
    service_uuid: inst.service_uuid,
    params: inst.params,
    metadata: inst.metadata,
    manifests: inst.manifests,
    master: inst.master,
  };
  if (v2) out.type = inst.type;
  return out;
}
