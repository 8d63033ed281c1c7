/** @module The checked open moved to shared/ (the runner opens what it copies the same way); kept here for the catalog's imports. */
export { openInsideSkill } from '../../shared/open-inside.js';
