/** @module The walk moved to shared/ (the runner copies the same file set); kept here for the catalog's imports. */
export { walkSkill, type FileRecord, type WalkResult } from '../../shared/skill-walk.js';
