import { Migration } from '@mikro-orm/migrations';

export class Migration20261128015812 extends Migration {

  override async up(): Promise<void> {
    this.addSql(`alter table "users" add column "external_id" varchar(100) null, add column "locale" varchar(10) null;`);
    this.addSql(`alter table "users" add constraint "users_external_id_unique" unique ("external_id");`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "users" drop constraint "users_external_id_unique";`);
    this.addSql(`alter table "users" drop column "external_id", drop column "locale";`);
  }

}
