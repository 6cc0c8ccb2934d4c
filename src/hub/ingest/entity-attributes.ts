/**
 * The attributes of a hub entity (DESIGN 5.1): `svc.name`, `svc.gateway`, `svc.probe`,
 * `svc.hostname`, `svc.os-type`, and the managed entity's setup attributes as `user.<Name>`.
 * An empty value counts as absent (seed A, attribute rule 3), so it is never stored.
 */
import type { EntityKey } from "../store/store.js";

export interface ProbeInfo {
  readonly osType?: string;
  readonly hostname?: string;
}

/** Builds an entity's attributes from its key, its probe's parameters and its setup attributes. */
export function entityAttributes(
  key: EntityKey,
  probe: ProbeInfo | undefined,
  userAttributes: Readonly<Record<string, string>>,
): Record<string, string> {
  // Null prototype: attribute names are data (`user.__proto__` is an ordinary name).
  const attributes: Record<string, string> = Object.create(null);
  const put = (name: string, value: string | undefined) => {
    if (value !== undefined && value !== "") attributes[name] = value;
  };
  put("svc.name", key.managedEntity);
  put("svc.gateway", key.gateway);
  put("svc.probe", key.probe);
  put("svc.hostname", probe?.hostname);
  put("svc.os-type", probe?.osType);
  for (const [name, value] of Object.entries(userAttributes)) put(`user.${name}`, value);
  return attributes;
}
